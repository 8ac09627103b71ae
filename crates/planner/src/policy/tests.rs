use super::*;

fn load(text: &str) -> Result<Policy, PolicyError> {
    Policy::from_yaml("p.yaml", text, &crate::plugins::REGISTRY)
}

const BASE: &str = r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 5
profiles:
- name: default
  pluginConfig:
  - name: RemoveDuplicates
  plugins:
    balance:
      enabled: [RemoveDuplicates]
"#;

#[test]
fn kind_and_api_version_errors_say_what_was_found() {
    let e = load(&BASE.replace("kind: DeschedulerPolicy", "kind: Policy")).unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("\"Policy\" is not allowed") && !e.contains("Some("),
        "{e}"
    );
    let e = load(&BASE.replace("kind: DeschedulerPolicy", "kind: 5")).unwrap_err();
    assert!(e.to_string().contains("found the number 5"), "{e}");
    let e = load(&BASE.replace("kind: DeschedulerPolicy\n", "")).unwrap_err();
    assert!(e.to_string().contains("missing"), "{e}");
    let e = load(&BASE.replace(
        "apiVersion: descheduler/v1alpha2",
        "apiVersion: [descheduler/v1alpha2]",
    ))
    .unwrap_err();
    let e = e.to_string();
    assert!(e.contains("found a list") && !e.contains("missing"), "{e}");
}

#[test]
fn a_debug_print_of_a_prometheus_provider_hides_the_url_credentials() {
    let p = PrometheusProvider {
        url: "http://scraper:s3cret@prometheus:9090/".into(),
        auth_token: None,
        node_label: None,
        ca_file: None,
        insecure_skip_verify: false,
        timeout: None,
    };
    let shown = format!("{p:?}");
    assert!(
        !shown.contains("s3cret") && shown.contains("***@prometheus:9090"),
        "{shown}"
    );
}

#[test]
fn defaults_default_evictor() {
    let p = load(BASE).unwrap();
    let prof = &p.profiles[0];
    assert_eq!(prof.plugin_config.last().unwrap().name, "DefaultEvictor");
    assert_eq!(prof.plugins.filter.enabled, vec!["DefaultEvictor"]);
    assert_eq!(
        prof.plugins.preevictionfilter.enabled,
        vec!["DefaultEvictor"]
    );
    assert_eq!(p.max_no_of_pods_to_evict_per_node, Some(5));
}

#[test]
fn accepts_camel_case_pre_eviction_filter() {
    let text = BASE.replace(
        "    balance:",
        "    preEvictionFilter:\n      enabled: [DefaultEvictor]\n    balance:",
    );
    let p = load(&text).unwrap();
    assert_eq!(
        p.profiles[0].plugins.preevictionfilter.enabled,
        vec!["DefaultEvictor"]
    );
}

#[test]
fn unknown_plugin_names_path() {
    let e = load(&BASE.replace("enabled: [RemoveDuplicates]", "enabled: [RemoveDuplicatez]"))
        .unwrap_err();
    assert_eq!(e.path, "profiles[0].plugins.balance.enabled[0]");
    assert!(
        e.message.contains("unknown plugin \"RemoveDuplicatez\""),
        "{e}"
    );
}

#[test]
fn wrong_extension_point() {
    let e = load(&BASE.replace("balance:", "deschedule:")).unwrap_err();
    assert!(
        e.message.contains("does not implement the deschedule"),
        "{e}"
    );
}

#[test]
fn missing_plugin_config() {
    let e = load(&BASE.replace("  - name: RemoveDuplicates\n", "")).unwrap_err();
    assert!(e.message.contains("no pluginConfig entry"), "{e}");
}

#[test]
fn bad_top_level_fields() {
    let e = load(&BASE.replace(
        "maxNoOfPodsToEvictPerNode: 5",
        "maxNoOfPodsToEvictPerNode: -1",
    ))
    .unwrap_err();
    assert_eq!(e.path, "maxNoOfPodsToEvictPerNode");
    let e = load(&BASE.replace(
        "maxNoOfPodsToEvictPerNode: 5",
        "maxNoOfPodsToEvictPerNode: five",
    ))
    .unwrap_err();
    assert_eq!(e.path, "maxNoOfPodsToEvictPerNode");
    let e = load(&BASE.replace("maxNoOfPodsToEvictPerNode: 5", "maxPods: 5")).unwrap_err();
    assert!(e.message.contains("unknown field"), "{e}");
    let e = load(&BASE.replace("v1alpha2", "v1alpha1")).unwrap_err();
    assert_eq!(e.path, "apiVersion");
    let e = load(&BASE.replace("maxNoOfPodsToEvictPerNode: 5", "nodeSelector: \"a in (b\""))
        .unwrap_err();
    assert_eq!(e.path, "nodeSelector");
    assert!(load("").is_err());
    assert!(load("profiles: [").is_err());
}

#[test]
fn metrics_providers_are_validated() {
    let with = |m: &str| load(&format!("{BASE}metricsProviders:\n{m}"));
    assert!(with("- source: KubernetesMetrics\n").is_ok());
    assert!(with("- source: Prometheus\n  prometheus:\n    url: https://prom:9090\n").is_ok());
    let e = with("- source: Prometheus\n").unwrap_err();
    assert_eq!(e.path, "metricsProviders[0].prometheus.url");
    let e = with("- source: Graphite\n").unwrap_err();
    assert_eq!(e.path, "metricsProviders[0].source");
}

#[test]
fn sort_extension_point_takes_dominant_resource_fairness() {
    let with_sort = |sort: &str| {
        load(&BASE.replace(
            "    balance:\n",
            &format!("    sort:\n      enabled: [{sort}]\n    balance:\n"),
        ))
    };
    // No pluginConfig needed: its args all have defaults.
    let p = with_sort("DominantResourceFairness").unwrap();
    assert_eq!(
        p.profiles[0].plugins.sort.effective(),
        vec!["DominantResourceFairness"]
    );
    let e = with_sort("Fairest").unwrap_err();
    assert_eq!(e.path, "profiles[0].plugins.sort.enabled[0]");
    assert!(e.message.contains("unknown plugin \"Fairest\""), "{e}");
    assert!(e.message.contains("DominantResourceFairness"), "{e}");
    let e = with_sort("RemoveDuplicates").unwrap_err();
    assert_eq!(e.path, "profiles[0].plugins.sort.enabled[0]");
    assert!(e.message.contains("does not implement the sort"), "{e}");
    let e = with_sort("DominantResourceFairness, DominantResourceFairness").unwrap_err();
    assert_eq!(e.path, "profiles[0].plugins.sort.enabled[1]");
    assert!(e.message.contains("only one sort plugin"), "{e}");
    // At another extension point it is refused with the path.
    let e = load(&BASE.replace(
        "enabled: [RemoveDuplicates]",
        "enabled: [RemoveDuplicates, DominantResourceFairness]",
    ))
    .unwrap_err();
    assert_eq!(e.path, "profiles[0].plugins.balance.enabled[1]");
    assert!(
        e.message
            .contains("does not implement the balance extension point; it implements sort"),
        "{e}"
    );
}

#[test]
fn duplicate_profiles_rejected() {
    let text = format!("{BASE}- name: default\n");
    let e = load(&text).unwrap_err();
    assert_eq!(e.path, "profiles[1].name");
}
