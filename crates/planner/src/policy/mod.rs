//! The `descheduler/v1alpha2` DeschedulerPolicy: types, loading, defaulting and validation of
//! everything above the plugins' own args (which each plugin module validates itself).
//!
//! Loading never touches the network. Every error names the file, the field's path and
//! what is allowed.

mod budgets;
mod duration;
pub mod scheduler_config;

pub use budgets::{BudgetLimit, BudgetWindow, EvictionBudget, EvictionBudgetSpec};
pub use duration::{parse_duration, parse_go_duration};

use crate::snapshot::usage::UsageSource;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub(crate) const API_VERSION: &str = "descheduler/v1alpha2";
pub(crate) const KIND: &str = "DeschedulerPolicy";

/// Where in a profile a plugin may be enabled (`profiles[].plugins.<point>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionPoint {
    /// May this pod be evicted at all? (the evictor)
    Filter,
    /// Checked just before an eviction is planned (the evictor).
    PreEvictionFilter,
    /// The order in which a profile's plugins take their candidates.
    Sort,
    /// Plugins that evict pods one by one, each for its own reason.
    Deschedule,
    /// Plugins that evict pods to even out the nodes.
    Balance,
}

impl ExtensionPoint {
    /// The point's key in a policy, as validation reports it (`preevictionfilter`).
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionPoint::Filter => "filter",
            ExtensionPoint::PreEvictionFilter => "preevictionfilter",
            ExtensionPoint::Sort => "sort",
            ExtensionPoint::Deschedule => "deschedule",
            ExtensionPoint::Balance => "balance",
        }
    }
}

/// What loading a policy needs to know of the plugins, given by the caller (the plugin
/// registry, as upstream's `LoadPolicyConfig(file, client, registry)` is given one): which
/// plugins exist, where each may be enabled, whether its args all have defaults, and which
/// one is every profile's evictor. The policy room names no plugin of its own.
pub trait PluginCatalog {
    /// Every plugin's name, in the order error messages list them.
    fn names(&self) -> Vec<&'static str>;
    /// The extension points the plugin implements; None: no plugin of that name.
    fn points(&self, name: &str) -> Option<&'static [ExtensionPoint]>;
    /// Whether every one of the plugin's args has a default, so that enabling it needs no
    /// pluginConfig entry.
    fn args_optional(&self, name: &str) -> bool;
    /// The plugin enabled as `filter` and `preEvictionFilter` in every profile that enables
    /// none (upstream's DefaultEvictor).
    fn evictor(&self) -> &'static str;
}

/// An invalid policy: the file, the path of the offending field and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy {file}: {path}: {message}")]
pub struct PolicyError {
    /// The policy file, as given to the loader.
    pub file: String,
    /// The path of the offending field, such as `profiles[0].pluginConfig[1].args.thresholds.cpu`.
    pub path: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl PolicyError {
    /// An error about `file` at the field `path`.
    pub fn new(file: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        PolicyError {
            file: file.to_string(),
            path: path.into(),
            message: message.into(),
        }
    }
}

/// Go's JSON decoding treats `null` as the empty value; so do we (`pluginConfig:` with
/// nothing under it is an empty list).
pub(crate) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A profile's plugins at one extension point (`enabled` and `disabled`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PluginSet {
    /// `enabled`: the plugins to run, in order.
    #[serde(deserialize_with = "null_as_default")]
    pub enabled: Vec<String>,
    /// `disabled`: plugins taken out of `enabled` (`*`: all of them).
    #[serde(deserialize_with = "null_as_default")]
    pub disabled: Vec<String>,
}

impl PluginSet {
    /// Enabled plugins, minus the disabled ones, in the order given.
    pub(crate) fn effective(&self) -> Vec<String> {
        self.enabled
            .iter()
            .filter(|p| !self.disabled.iter().any(|d| d == *p || d == "*"))
            .cloned()
            .collect()
    }
}

/// A profile's `plugins`: the plugin sets of each extension point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plugins {
    /// `preSort`: validated like the others, but no plugin implements it, so it must stay empty.
    #[serde(default, alias = "preSort", deserialize_with = "null_as_default")]
    pub presort: PluginSet,
    /// `sort`: at most one plugin, which orders the profile's evictions.
    #[serde(default, deserialize_with = "null_as_default")]
    pub sort: PluginSet,
    /// `deschedule`: plugins that evict pods one by one, each for its own reason.
    #[serde(default, deserialize_with = "null_as_default")]
    pub deschedule: PluginSet,
    /// `balance`: plugins that evict pods to even out the nodes.
    #[serde(default, deserialize_with = "null_as_default")]
    pub balance: PluginSet,
    /// `filter`: the evictor deciding whether a pod may be evicted (default: DefaultEvictor).
    #[serde(default, deserialize_with = "null_as_default")]
    pub filter: PluginSet,
    /// `preEvictionFilter`: the evictor checked just before an eviction is planned (default:
    /// DefaultEvictor).
    #[serde(
        default,
        alias = "preEvictionFilter",
        deserialize_with = "null_as_default"
    )]
    pub preevictionfilter: PluginSet,
}

/// One `pluginConfig` entry: a plugin's name and its args.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginConfig {
    /// `name`: the plugin the args are for.
    pub name: String,
    /// `args`: the plugin's args, as written; the plugin decodes and validates them.
    #[serde(default)]
    pub args: serde_json::Value,
}

/// One of the policy's `profiles`: plugins with their args.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Profile {
    /// `name`: the profile's name, unique in the policy.
    pub name: String,
    /// `pluginConfig`: the args of the profile's plugins, one entry per plugin.
    #[serde(default, deserialize_with = "null_as_default")]
    pub plugin_config: Vec<PluginConfig>,
    /// `plugins`: the plugins enabled (and disabled) at each extension point.
    #[serde(default, deserialize_with = "null_as_default")]
    pub plugins: Plugins,
}

impl Profile {
    /// The `pluginConfig` entry of the plugin `name`, with its index; None: the profile has none.
    pub fn plugin_config(&self, name: &str) -> Option<(usize, &PluginConfig)> {
        self.plugin_config
            .iter()
            .enumerate()
            .find(|(_, c)| c.name == name)
    }
}

/// `secretReference`: the Secret holding the Prometheus token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretReference {
    /// `namespace`: the Secret's namespace.
    pub namespace: String,
    /// `name`: the Secret's name.
    pub name: String,
}

/// `authToken`: where the Prometheus bearer token comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthToken {
    /// `secretReference`: the Secret holding the token (data key `prometheusAuthToken`).
    pub secret_reference: Option<SecretReference>,
}

/// What a JSON value is, for an error (`a list [1, 2]`, `the number 5`).
/// How a JSON value is named in an error: its type and (cut) text, such as `a list [1]`.
pub(crate) fn json_type(v: &serde_json::Value) -> String {
    let mut text = v.to_string();
    if text.len() > 60 {
        let mut end = 57;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    let what = match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "the boolean",
        serde_json::Value::Number(_) => "the number",
        serde_json::Value::String(_) => "the string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    };
    format!("{what} {text}")
}

/// `url` as it may be shown in logs, errors and reports: credentials in it
/// (`http://user:password@host`) replaced by `***`.
pub fn redact_url(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        let authority = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        if let Some(at) = rest[..authority].rfind('@') {
            return format!("{}://***@{}", &url[..scheme_end], &rest[at + 1..]);
        }
    }
    url.to_string()
}

/// `prometheus`: how to reach a Prometheus server.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrometheusProvider {
    /// `url`: the server's URL, http:// or https:// (required for the Prometheus source).
    #[serde(default)]
    pub url: String,
    /// `authToken`: the token to send; None: the service account's token when in a cluster.
    #[serde(default)]
    pub auth_token: Option<AuthToken>,
    /// Beyond upstream: the label whose value is the node name (upstream: `instance`).
    #[serde(default)]
    pub node_label: Option<String>,
    /// Beyond upstream: a PEM file of CA certificates to trust for an https URL.
    #[serde(default)]
    pub ca_file: Option<String>,
    /// Beyond upstream: skip verifying the server's certificate (testing only).
    #[serde(default, deserialize_with = "null_as_default")]
    pub insecure_skip_verify: bool,
    /// Beyond upstream: how long one query may take (a duration such as `10s`; default 10s).
    #[serde(default)]
    pub timeout: Option<String>,
}

/// Prometheus' default label for the node a series belongs to.
pub(crate) const DEFAULT_PROMETHEUS_NODE_LABEL: &str = "instance";
/// Default timeout of one Prometheus query, seconds.
pub(crate) const DEFAULT_PROMETHEUS_TIMEOUT_SECONDS: i64 = 10;

/// Written with the URL's credentials redacted, so that no debug print shows them.
impl std::fmt::Debug for PrometheusProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrometheusProvider")
            .field("url", &redact_url(&self.url))
            .field("auth_token", &self.auth_token)
            .field("node_label", &self.node_label)
            .field("ca_file", &self.ca_file)
            .field("insecure_skip_verify", &self.insecure_skip_verify)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl PrometheusProvider {
    /// The label naming the node of a series: `nodeLabel`, or `instance` when unset or empty.
    pub fn node_label(&self) -> &str {
        self.node_label
            .as_deref()
            .filter(|l| !l.is_empty())
            .unwrap_or(DEFAULT_PROMETHEUS_NODE_LABEL)
    }

    /// The query timeout in seconds: `timeout`, or 10 when unset.
    pub fn timeout_seconds(&self) -> i64 {
        self.timeout
            .as_deref()
            .map(|t| parse_duration(t).expect("validated at load"))
            .unwrap_or(DEFAULT_PROMETHEUS_TIMEOUT_SECONDS)
    }
}

/// One of `metricsProviders`: a source of real usage and its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricsProvider {
    /// `source`: `KubernetesMetrics` (metrics-server) or `Prometheus`; each at most once.
    pub source: crate::snapshot::usage::UsageSource,
    /// `prometheus`: the server's settings; only for the Prometheus source.
    #[serde(default)]
    pub prometheus: Option<PrometheusProvider>,
    /// Beyond upstream: samples older than this (a duration such as `5m`; default 5m) are
    /// stale, and the node or pod they describe is left out.
    #[serde(default)]
    pub max_sample_age: Option<String>,
}

impl MetricsProvider {
    /// The sample age in seconds beyond which samples are stale: `maxSampleAge`, or 5 minutes when
    /// unset.
    pub fn max_sample_age_seconds(&self) -> i64 {
        self.max_sample_age
            .as_deref()
            .map(|t| parse_duration(t).expect("validated at load"))
            .unwrap_or(crate::snapshot::usage::DEFAULT_MAX_SAMPLE_AGE_SECONDS)
    }
}

/// `metricsCollector` (deprecated): upstream's older switch for metrics-server usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct MetricsCollector {
    /// `enabled`: use metrics-server, as a `KubernetesMetrics` entry in `metricsProviders` would.
    pub enabled: bool,
}

/// The policy document, as written, after defaulting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// `apiVersion`: always `descheduler/v1alpha2`.
    pub api_version: String,
    /// `kind`: always `DeschedulerPolicy`.
    pub kind: String,
    /// `profiles`: the profiles, each with its own plugins and args.
    #[serde(default, deserialize_with = "null_as_default")]
    pub profiles: Vec<Profile>,
    /// `nodeSelector`: a label selector picking the nodes the plugins work on (None: every node).
    #[serde(default)]
    pub node_selector: Option<String>,
    /// `maxNoOfPodsToEvictPerNode`: the most evictions per node in a cycle (None: no limit).
    #[serde(default)]
    pub max_no_of_pods_to_evict_per_node: Option<i64>,
    /// `maxNoOfPodsToEvictPerNamespace`: the most evictions per namespace in a cycle (None: no
    /// limit).
    #[serde(default)]
    pub max_no_of_pods_to_evict_per_namespace: Option<i64>,
    /// `maxNoOfPodsToEvictTotal`: the most evictions in a cycle (None: no limit).
    #[serde(default)]
    pub max_no_of_pods_to_evict_total: Option<i64>,
    /// `evictionFailureEventNotification`: emit an event when an eviction fails (None: false).
    #[serde(default)]
    pub eviction_failure_event_notification: Option<bool>,
    /// `gracePeriodSeconds`: the termination grace period evictions give pods, instead of their
    /// own (None: their own).
    #[serde(default)]
    pub grace_period_seconds: Option<i64>,
    /// `metricsCollector` (deprecated): `enabled: true` adds a `KubernetesMetrics` provider.
    #[serde(default)]
    pub metrics_collector: Option<MetricsCollector>,
    /// `metricsProviders`: where real usage comes from, one entry per source.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metrics_providers: Vec<MetricsProvider>,
    /// `evictionBudgets` (an extension; upstream has no such field): budgets of evictions,
    /// each with a scope and optionally a time window ([`EvictionBudget`]).
    #[serde(default, deserialize_with = "null_as_default")]
    pub eviction_budgets: Vec<EvictionBudgetSpec>,
}

impl Policy {
    /// The policy's `evictionBudgets`, validated against its profiles and the `plugins` that
    /// exist.
    pub fn budgets(
        &self,
        file: &str,
        plugins: &dyn PluginCatalog,
    ) -> Result<Vec<EvictionBudget>, PolicyError> {
        let profiles: Vec<&str> = self.profiles.iter().map(|p| p.name.as_str()).collect();
        let is_plugin = |name: &str| check_plugin_name(plugins, name).map(|_| ());
        budgets::compile(file, &self.eviction_budgets, &profiles, &is_plugin)
    }

    /// Reads, decodes, defaults and validates a policy file against the `plugins` that exist.
    pub fn load(path: &Path, plugins: &dyn PluginCatalog) -> Result<Policy, PolicyError> {
        let file = path.display().to_string();
        let text = crate::input::read_utf8_file(path, crate::input::POLICY_LIMIT)
            .map_err(|e| PolicyError::new(&file, "(file)", format!("cannot read the file: {e}")))?;
        Policy::from_yaml(&file, &text, plugins)
    }

    /// Decodes, defaults and validates a policy given as YAML (or JSON) text against the
    /// `plugins` that exist.
    pub fn from_yaml(
        file: &str,
        text: &str,
        plugins: &dyn PluginCatalog,
    ) -> Result<Policy, PolicyError> {
        if text.trim().is_empty() {
            return Err(PolicyError::new(
                file,
                "(document)",
                "the file is empty; expected a DeschedulerPolicy (apiVersion: descheduler/v1alpha2)",
            ));
        }
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let value: serde_json::Value =
            serde_saphyr::from_str_with_options(text, crate::yaml::options_for(text)).map_err(
                |e| {
                    PolicyError::new(
                        file,
                        "(document)",
                        format!("not valid YAML: {}", crate::yaml::plain_error(&e)),
                    )
                },
            )?;
        if !value.is_object() {
            return Err(PolicyError::new(
                file,
                "(document)",
                "expected a mapping with apiVersion: descheduler/v1alpha2 and kind: DeschedulerPolicy",
            ));
        }
        match value.get("apiVersion") {
            Some(serde_json::Value::String(v)) if v == API_VERSION => {}
            Some(serde_json::Value::String(other)) => {
                return Err(PolicyError::new(
                    file,
                    "apiVersion",
                    format!("{other:?} is not supported; use {API_VERSION:?} (v1alpha1 policies must be converted to v1alpha2 profiles)"),
                ))
            }
            None | Some(serde_json::Value::Null) => return Err(PolicyError::new(file, "apiVersion", format!("missing; set it to {API_VERSION:?}"))),
            Some(other) => {
                return Err(PolicyError::new(
                    file,
                    "apiVersion",
                    format!("expected a string, found {}; set it to {API_VERSION:?}", json_type(other)),
                ))
            }
        }
        match value.get("kind") {
            Some(serde_json::Value::String(v)) if v == KIND => {}
            Some(serde_json::Value::String(other)) => {
                return Err(PolicyError::new(
                    file,
                    "kind",
                    format!("{other:?} is not allowed; set it to {KIND:?}"),
                ))
            }
            None | Some(serde_json::Value::Null) => {
                return Err(PolicyError::new(
                    file,
                    "kind",
                    format!("missing; set it to {KIND:?}"),
                ))
            }
            Some(other) => {
                return Err(PolicyError::new(
                    file,
                    "kind",
                    format!(
                        "expected a string, found {}; set it to {KIND:?}",
                        json_type(other)
                    ),
                ))
            }
        }
        let mut policy: Policy = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            PolicyError::new(file, path, e.into_inner().to_string())
        })?;
        policy.set_defaults(plugins.evictor());
        policy.validate(file, plugins)?;
        Ok(policy)
    }

    /// Upstream's defaulting: the `evictor` (DefaultEvictor) is enabled as filter and
    /// preEvictionFilter and gets a pluginConfig (with default args) in every profile that
    /// lacks one.
    fn set_defaults(&mut self, evictor: &str) {
        for p in &mut self.profiles {
            if p.plugins.filter.effective().is_empty() {
                p.plugins.filter.enabled.push(evictor.into());
            }
            if p.plugins.preevictionfilter.effective().is_empty() {
                p.plugins.preevictionfilter.enabled.push(evictor.into());
            }
            // Appended (upstream prepends) so that error paths keep the user's indexes.
            if p.plugin_config(evictor).is_none() {
                p.plugin_config.push(PluginConfig {
                    name: evictor.into(),
                    args: serde_json::Value::Object(Default::default()),
                });
            }
        }
    }

    fn validate(&self, file: &str, plugins: &dyn PluginCatalog) -> Result<(), PolicyError> {
        let err = |path: String, msg: String| PolicyError::new(file, path, msg);
        for (field, v) in [
            (
                "maxNoOfPodsToEvictPerNode",
                self.max_no_of_pods_to_evict_per_node,
            ),
            (
                "maxNoOfPodsToEvictPerNamespace",
                self.max_no_of_pods_to_evict_per_namespace,
            ),
            (
                "maxNoOfPodsToEvictTotal",
                self.max_no_of_pods_to_evict_total,
            ),
        ] {
            if let Some(v) = v {
                if v < 0 {
                    return Err(err(
                        field.into(),
                        format!("{v} is negative; use a count of pods, 0 or more"),
                    ));
                }
            }
        }
        if let Some(g) = self.grace_period_seconds {
            if g < 0 {
                return Err(err(
                    "gracePeriodSeconds".into(),
                    format!("{g} is negative; use 0 or more seconds"),
                ));
            }
        }
        if let Some(sel) = &self.node_selector {
            crate::labels::Selector::parse(sel).map_err(|e| {
                err(
                    "nodeSelector".into(),
                    format!("{e}; use a label selector such as \"pool=workers,zone in (a,b)\""),
                )
            })?;
        }
        self.validate_metrics(file)?;
        self.budgets(file, plugins)?;
        let mut names = std::collections::BTreeSet::new();
        for (pi, p) in self.profiles.iter().enumerate() {
            let at = |rest: &str| format!("profiles[{pi}]{rest}");
            if p.name.is_empty() {
                return Err(err(
                    at(".name"),
                    "missing; every profile needs a name".into(),
                ));
            }
            if !names.insert(p.name.as_str()) {
                return Err(err(
                    at(".name"),
                    format!(
                        "duplicate profile name {:?}; profile names must be unique",
                        p.name
                    ),
                ));
            }
            let mut seen_cfg = std::collections::BTreeSet::new();
            for (ci, c) in p.plugin_config.iter().enumerate() {
                check_plugin_name(plugins, &c.name)
                    .map_err(|m| err(at(&format!(".pluginConfig[{ci}].name")), m))?;
                if !seen_cfg.insert(c.name.as_str()) {
                    return Err(err(
                        at(&format!(".pluginConfig[{ci}].name")),
                        format!(
                            "{:?} is configured twice; give each plugin one pluginConfig entry",
                            c.name
                        ),
                    ));
                }
            }
            for (point, set) in [
                ("presort", &p.plugins.presort),
                ("sort", &p.plugins.sort),
                ("deschedule", &p.plugins.deschedule),
                ("balance", &p.plugins.balance),
                ("filter", &p.plugins.filter),
                ("preevictionfilter", &p.plugins.preevictionfilter),
            ] {
                for (ei, name) in set.enabled.iter().enumerate() {
                    let path = at(&format!(".plugins.{point}.enabled[{ei}]"));
                    let implemented =
                        check_plugin_name(plugins, name).map_err(|m| err(path.clone(), m))?;
                    if !implemented.iter().any(|p| p.as_str() == point) {
                        let points: Vec<&str> = implemented.iter().map(|p| p.as_str()).collect();
                        return Err(err(
                            path,
                            format!(
                                "plugin {name:?} does not implement the {point} extension point; it implements {}",
                                points.join(", ")
                            ),
                        ));
                    }
                    if point == "sort" && ei > 0 {
                        return Err(err(
                            path,
                            format!("only one sort plugin orders a profile's evictions; remove {name:?} or {:?}", set.enabled[0]),
                        ));
                    }
                    if p.plugin_config(name).is_none() && !plugins.args_optional(name) {
                        return Err(err(
                            path,
                            format!("plugin {name:?} is enabled but has no pluginConfig entry; add one under profiles[{pi}].pluginConfig with name: {name}"),
                        ));
                    }
                }
                for (di, name) in set.disabled.iter().enumerate() {
                    if name != "*" {
                        check_plugin_name(plugins, name)
                            .map_err(|m| err(at(&format!(".plugins.{point}.disabled[{di}]")), m))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn validate_metrics(&self, file: &str) -> Result<(), PolicyError> {
        let mut seen = std::collections::BTreeSet::new();
        for (i, m) in self.metrics_providers.iter().enumerate() {
            let path = format!("metricsProviders[{i}]");
            if !seen.insert(m.source) {
                return Err(PolicyError::new(
                    file,
                    format!("{path}.source"),
                    format!(
                        "{} is configured twice; configure each metrics source once",
                        m.source.policy_name()
                    ),
                ));
            }
            if let Some(age) = &m.max_sample_age {
                match parse_duration(age) {
                    Ok(s) if s > 0 => {}
                    Ok(_) => {
                        return Err(PolicyError::new(
                            file,
                            format!("{path}.maxSampleAge"),
                            format!("{age:?} must be longer than zero, such as 5m"),
                        ))
                    }
                    Err(e) => {
                        return Err(PolicyError::new(file, format!("{path}.maxSampleAge"), e))
                    }
                }
            }
            if let Some(p) = &m.prometheus {
                if let Some(t) = &p.timeout {
                    match parse_duration(t) {
                        Ok(s) if s > 0 => {}
                        Ok(_) => {
                            return Err(PolicyError::new(
                                file,
                                format!("{path}.prometheus.timeout"),
                                format!("{t:?} must be longer than zero, such as 10s"),
                            ))
                        }
                        Err(e) => {
                            return Err(PolicyError::new(
                                file,
                                format!("{path}.prometheus.timeout"),
                                e,
                            ))
                        }
                    }
                }
                if let Some(r) = p
                    .auth_token
                    .as_ref()
                    .and_then(|a| a.secret_reference.as_ref())
                {
                    if r.namespace.is_empty() || r.name.is_empty() {
                        return Err(PolicyError::new(
                            file,
                            format!("{path}.prometheus.authToken.secretReference"),
                            "needs both namespace and name of the Secret holding the token (data key prometheusAuthToken)",
                        ));
                    }
                }
            }
            if m.source == UsageSource::Prometheus {
                let url = m.prometheus.as_ref().map(|p| p.url.as_str()).unwrap_or("");
                if url.is_empty() {
                    return Err(PolicyError::new(
                        file,
                        format!("{path}.prometheus.url"),
                        "missing; the Prometheus source needs the server's URL, such as http://prometheus.monitoring:9090",
                    ));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(PolicyError::new(
                        file,
                        format!("{path}.prometheus.url"),
                        format!("{:?} is not an http:// or https:// URL", redact_url(url)),
                    ));
                }
            } else if m.prometheus.is_some() {
                return Err(PolicyError::new(
                    file,
                    format!("{path}.prometheus"),
                    "only the Prometheus source takes prometheus settings",
                ));
            }
        }
        if self.metrics_collector.as_ref().is_some_and(|c| c.enabled)
            && self
                .metrics_providers
                .iter()
                .any(|m| m.source == UsageSource::MetricsServer)
        {
            return Err(PolicyError::new(
                file,
                "metricsCollector.enabled",
                "cannot be combined with a KubernetesMetrics entry in metricsProviders; keep only metricsProviders (metricsCollector is deprecated)",
            ));
        }
        Ok(())
    }

    /// The parsed `nodeSelector`; everything when unset.
    pub fn node_selector(&self) -> crate::labels::Selector {
        self.node_selector
            .as_deref()
            .map(|s| crate::labels::Selector::parse(s).expect("validated at load"))
            .unwrap_or_default()
    }
}

/// Known plugins are those of the catalog; a known plugin's extension points.
fn check_plugin_name(
    plugins: &dyn PluginCatalog,
    name: &str,
) -> Result<&'static [ExtensionPoint], String> {
    if let Some(points) = plugins.points(name) {
        return Ok(points);
    }
    let known = plugins.names();
    Err(format!(
        "unknown plugin {name:?}; known plugins: {}",
        known.join(", ")
    ))
}

#[cfg(test)]
mod tests;
