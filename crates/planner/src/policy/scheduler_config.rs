//! `--scheduler-config FILE`: a KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`),
//! read for what changes where kube-scheduler puts a pod: each profile's score plugins
//! (enabled, disabled, weights, at `multiPoint` and at `score`) and the args of
//! NodeResourcesFit (`scoringStrategy`), NodeResourcesBalancedAllocation (`resources`),
//! InterPodAffinity (`hardPodAffinityWeight`, `ignorePreferredTermsOfExistingPods`) and
//! PodTopologySpread (`defaultingType`, `defaultConstraints`). Other fields (leader election,
//! client connection, filter-only plugins) are checked and do not change predictions.
//!
//! The file is decoded as strictly as kube-scheduler decodes it: a field kube-scheduler does
//! not know is an error (with the closest known name), so is a key given twice, and values
//! are defaulted and range-checked as kube-scheduler's v1 defaulting and validation do (an
//! empty resource list is cpu and memory with weight 1; a resource weight of 0 is 1). What
//! the simulator cannot follow is refused when following it would make kube-scheduler
//! stricter than the prediction (extenders that filter or score, NodeAffinity's
//! `addedAffinity`), and warned about when the prediction is the stricter one (filter plugins
//! disabled, NodeResourcesFit's `ignoredResources`).
//!
//! Errors name the file, the field's path (`profiles[0].pluginConfig[1].args.scoringStrategy.type`)
//! and what to write instead.

use crate::sim::score::{
    default_resources, DefaultConstraints, ResourceSpec, ScoreProfile, ScoringStrategy,
    MAX_CUSTOM_PRIORITY_SCORE, SCORE_PLUGINS,
};
use crate::snapshot::{InclusionPolicy, TopologySpreadConstraint, WhenUnsatisfiable};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// The `apiVersion` of a scheduler configuration file.
pub(crate) const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
/// The `kind` of a scheduler configuration file.
pub(crate) const KIND: &str = "KubeSchedulerConfiguration";
/// The profile kube-scheduler gives pods that name no scheduler.
pub(crate) const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// kube-scheduler's in-tree plugins that do not score: accepted wherever a plugin is named,
/// they do not change the simulator's pick.
const NON_SCORE_PLUGINS: &[&str] = &[
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "NodePorts",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "DefaultPreemption",
    "DefaultBinder",
    "DynamicResources",
    "NodeDeclaredFeatures",
    "GangScheduling",
    "PodGroupPodsCount",
    "TopologyAware",
];

/// The most a scheduler config file may hold: 4 MiB (kube-scheduler's are a few KB).
pub(crate) const FILE_LIMIT: u64 = 4 << 20;

/// The fields of a KubeSchedulerConfiguration (v1).
const TOP_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
];
const LEADER_ELECTION_FIELDS: &[&str] = &[
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
];
const CLIENT_CONNECTION_FIELDS: &[&str] = &[
    "kubeconfig",
    "acceptContentTypes",
    "contentType",
    "qps",
    "burst",
];
const PROFILE_FIELDS: &[&str] = &[
    "schedulerName",
    "percentageOfNodesToScore",
    "plugins",
    "pluginConfig",
];
/// The extension points of `plugins`.
const PLUGIN_POINTS: &[&str] = &[
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    "multiPoint",
    "placementGenerate",
    "placementScore",
    "podGroupPostFilter",
];
const EXTENDER_FIELDS: &[&str] = &[
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
];
const EXTENDER_TLS_FIELDS: &[&str] = &[
    "insecure",
    "serverName",
    "certFile",
    "keyFile",
    "caFile",
    "certData",
    "keyData",
    "caData",
];
/// The fields of each in-tree plugin's args (besides `apiVersion` and `kind`).
const ARGS_FIELDS: &[(&str, &[&str])] = &[
    (
        "NodeResourcesFit",
        &[
            "ignoredResources",
            "ignoredResourceGroups",
            "scoringStrategy",
        ],
    ),
    ("NodeResourcesBalancedAllocation", &["resources"]),
    (
        "InterPodAffinity",
        &[
            "hardPodAffinityWeight",
            "ignorePreferredTermsOfExistingPods",
        ],
    ),
    (
        "PodTopologySpread",
        &["defaultConstraints", "defaultingType"],
    ),
    (
        "DefaultPreemption",
        &["minCandidateNodesPercentage", "minCandidateNodesAbsolute"],
    ),
    ("VolumeBinding", &["bindTimeoutSeconds", "shape"]),
    ("NodeAffinity", &["addedAffinity"]),
    ("DynamicResources", &["filterTimeout", "bindingTimeout"]),
];
const TOPOLOGY_SPREAD_FIELDS: &[&str] = &[
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
];

/// The filter plugins the simulator applies: disabling one in kube-scheduler makes it place
/// pods the simulator would not.
const SIMULATED_FILTERS: &[&str] = &[
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
];

/// An invalid scheduler configuration: the file, the path of the offending field and what to
/// do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scheduler config {file}: {path}: {message}")]
pub struct SchedulerConfigError {
    /// The file.
    pub file: String,
    /// The path of the offending field (`profiles[0].pluginConfig[1].args`).
    pub path: String,
    /// What is wrong and what to do.
    pub message: String,
}

/// The profiles of a KubeSchedulerConfiguration, by schedulerName, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfig {
    /// Each profile's scoring, by its schedulerName.
    pub profiles: Vec<(String, Arc<ScoreProfile>)>,
    /// What kube-scheduler does that the simulator does not follow, in the safe direction
    /// (the prediction is the stricter one): by the profile it concerns (None: every profile).
    pub warnings: Vec<(Option<String>, String)>,
}

impl SchedulerConfig {
    /// Reads and validates a KubeSchedulerConfiguration file.
    pub fn load(path: &Path) -> Result<SchedulerConfig, SchedulerConfigError> {
        let file = path.display().to_string();
        let text = crate::input::read_utf8_file(path, FILE_LIMIT)
            .map_err(|e| err(&file, "(file)", format!("cannot read the file: {e}")))?;
        Self::from_yaml(&file, &text)
    }

    /// The warnings that concern the profile of `scheduler_name`, each prefixed with the file.
    pub fn warnings_for(&self, file: &str, scheduler_name: &str) -> Vec<String> {
        self.warnings
            .iter()
            .filter(|(p, _)| p.as_deref().is_none_or(|p| p == scheduler_name))
            .map(|(_, w)| format!("scheduler config {file}: {w}"))
            .collect()
    }

    /// The profile of a scheduler by its name, or an error listing the names there are.
    pub fn profile(
        &self,
        file: &str,
        scheduler_name: &str,
    ) -> Result<Arc<ScoreProfile>, SchedulerConfigError> {
        self.profiles
            .iter()
            .find(|(n, _)| n == scheduler_name)
            .map(|(_, p)| p.clone())
            .ok_or_else(|| {
                let names: Vec<&str> = self.profiles.iter().map(|(n, _)| n.as_str()).collect();
                err(
                    file,
                    "profiles",
                    format!(
                        "no profile has schedulerName {scheduler_name:?} (there are: {}); add one, or pass the name of one with --scheduler-name",
                        names.join(", ")
                    ),
                )
            })
    }

    /// Decodes and validates a KubeSchedulerConfiguration given as YAML (or JSON) text.
    pub fn from_yaml(file: &str, text: &str) -> Result<SchedulerConfig, SchedulerConfigError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if text.len() as u64 > FILE_LIMIT {
            return Err(err(
                file,
                "(file)",
                format!(
                    "the file holds more than {} MiB, the most a scheduler config may be (kube-scheduler's are a few KB); is it the right file?",
                    FILE_LIMIT >> 20
                ),
            ));
        }
        if text.trim().is_empty() {
            return Err(err(
                file,
                "(document)",
                format!("the file is empty; expected a {KIND} (apiVersion: {API_VERSION})"),
            ));
        }
        let value: Value =
            serde_saphyr::from_str_with_options(text, crate::yaml::options_for(text)).map_err(
                |e| {
                    err(
                        file,
                        "(document)",
                        format!("not valid YAML: {}", crate::yaml::plain_error(&e)),
                    )
                },
            )?;
        let r = Reader { file };
        let top = r.object(&value, "(document)")?;
        let mut warnings = Vec::new();
        match top.get("apiVersion") {
            Some(Value::String(v)) if v == API_VERSION => {}
            Some(Value::String(v)) if v.starts_with("kubescheduler.config.k8s.io/") => {
                return Err(r.err(
                    "apiVersion",
                    format!("{v:?} is no longer served by kube-scheduler; convert the file to {API_VERSION:?}"),
                ))
            }
            Some(other) => {
                return Err(r.err(
                    "apiVersion",
                    format!("{other} is not a scheduler configuration; set it to {API_VERSION:?}"),
                ))
            }
            None => return Err(r.err("apiVersion", format!("missing; set it to {API_VERSION:?}"))),
        }
        match top.get("kind") {
            Some(Value::String(v)) if v == KIND => {}
            Some(other) => {
                return Err(r.err(
                    "kind",
                    format!("{other} is not allowed; set it to {KIND:?}"),
                ))
            }
            None => return Err(r.err("kind", format!("missing; set it to {KIND:?}"))),
        }
        r.fields(top, "", TOP_FIELDS, KIND)?;
        r.top_level(top)?;
        if let Some(v) = top.get("extenders").filter(|v| !v.is_null()) {
            r.extenders(v)?;
        }
        let mut profiles: Vec<(String, Arc<ScoreProfile>)> = Vec::new();
        let list = match top.get("profiles") {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => r.array(v, "profiles")?.to_vec(),
        };
        for (i, p) in list.iter().enumerate() {
            let path = format!("profiles[{i}]");
            let obj = r.object(p, &path)?;
            r.fields(obj, &path, PROFILE_FIELDS, "a profile")?;
            r.int(obj, "percentageOfNodesToScore", &path, 0, 100)?;
            let name = match obj.get("schedulerName") {
                // kube-scheduler names a lone profile; several need a name each
                None | Some(Value::Null) if list.len() > 1 => {
                    return Err(r.err(
                        format!("{path}.schedulerName"),
                        "missing; with more than one profile, give each its own schedulerName",
                    ))
                }
                None | Some(Value::Null) => DEFAULT_SCHEDULER_NAME.to_string(),
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                Some(other) => {
                    return Err(r.err(
                        format!("{path}.schedulerName"),
                        format!("expected a scheduler's name, found {other}"),
                    ))
                }
            };
            if profiles.iter().any(|(n, _)| *n == name) {
                return Err(r.err(
                    format!("{path}.schedulerName"),
                    format!("{name:?} names two profiles; give each profile its own schedulerName"),
                ));
            }
            let mut notes = Vec::new();
            let profile = r.profile(obj, &path, &mut notes)?;
            warnings.extend(notes.into_iter().map(|n| (Some(name.clone()), n)));
            profiles.push((name, Arc::new(profile)));
        }
        if profiles.is_empty() {
            // kube-scheduler's defaulting: one default profile
            profiles.push((
                DEFAULT_SCHEDULER_NAME.to_string(),
                Arc::new(ScoreProfile::default()),
            ));
        }
        Ok(SchedulerConfig { profiles, warnings })
    }
}

fn err(file: &str, path: impl Into<String>, message: impl Into<String>) -> SchedulerConfigError {
    SchedulerConfigError {
        file: file.to_string(),
        path: path.into(),
        message: message.into(),
    }
}

type Object = serde_json::Map<String, Value>;

/// `path.key`, or `key` at the top.
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The known name closest to `key`, when one is close enough to be a misspelling of it.
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let key = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (edit_distance(&key, &k.to_ascii_lowercase()), *k))
        .filter(|(d, k)| *d <= (k.len() / 3).clamp(1, 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance (the fewest one-character edits from `a` to `b`).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(cur)
            };
            prev = cur;
        }
    }
    row[b.len()]
}

struct Reader<'f> {
    file: &'f str,
}

impl Reader<'_> {
    fn err(&self, path: impl Into<String>, message: impl Into<String>) -> SchedulerConfigError {
        err(self.file, path, message)
    }

    /// Refuses a field of `obj` that kube-scheduler does not know, as kube-scheduler does.
    fn fields(
        &self,
        obj: &Object,
        path: &str,
        known: &[&str],
        what: &str,
    ) -> Result<(), SchedulerConfigError> {
        let Some(key) = obj.keys().find(|k| !known.contains(&k.as_str())) else {
            return Ok(());
        };
        let hint = closest(key, known)
            .map(|k| format!("did you mean {k:?}? "))
            .unwrap_or_default();
        Err(self.err(
            join(path, key),
            format!(
                "{key:?} is not a field of {what}; {hint}kube-scheduler refuses a file with a field it does not know. The fields are {}",
                known.join(", ")
            ),
        ))
    }

    fn bool(
        &self,
        obj: &Object,
        key: &str,
        path: &str,
    ) -> Result<Option<bool>, SchedulerConfigError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(
                join(path, key),
                format!("expected true or false, found {v}"),
            )),
        }
    }

    /// A mapping field checked against its known fields; absent: None.
    fn section<'v>(
        &self,
        obj: &'v Object,
        key: &str,
        path: &str,
        known: &[&str],
        what: &str,
    ) -> Result<Option<&'v Object>, SchedulerConfigError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let p = join(path, key);
                let o = self.object(v, &p)?;
                self.fields(o, &p, known, what)?;
                Ok(Some(o))
            }
        }
    }

    /// A list of strings; absent: empty.
    fn strings<'v>(
        &self,
        obj: &'v Object,
        key: &str,
        path: &str,
    ) -> Result<Vec<&'v str>, SchedulerConfigError> {
        let p = join(path, key);
        match obj.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(v) => self
                .array(v, &p)?
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    s.as_str().ok_or_else(|| {
                        self.err(format!("{p}[{i}]"), format!("expected a string, found {s}"))
                    })
                })
                .collect(),
        }
    }

    /// A Go duration (`10s`, `1m30s`); absent: fine.
    fn duration(&self, obj: &Object, key: &str, path: &str) -> Result<(), SchedulerConfigError> {
        if let Some(d) = self.string(obj, key, path)? {
            crate::policy::parse_go_duration(d).map_err(|e| self.err(join(path, key), e))?;
        }
        Ok(())
    }

    /// The top level's own fields, ranged as kube-scheduler's validation ranges them.
    fn top_level(&self, top: &Object) -> Result<(), SchedulerConfigError> {
        self.int(top, "parallelism", "", 1, i64::from(i32::MAX))?;
        self.int(top, "percentageOfNodesToScore", "", 0, 100)?;
        let initial = self
            .int(top, "podInitialBackoffSeconds", "", 1, i64::MAX)?
            .unwrap_or(1);
        let max = self
            .int(top, "podMaxBackoffSeconds", "", 0, i64::MAX)?
            .unwrap_or(10);
        if max < initial {
            return Err(self.err(
                "podMaxBackoffSeconds",
                format!("{max} is less than podInitialBackoffSeconds ({initial}); give at least {initial}"),
            ));
        }
        for key in [
            "enableProfiling",
            "enableContentionProfiling",
            "delayCacheUntilActive",
        ] {
            self.bool(top, key, "")?;
        }
        if let Some(le) = self.section(
            top,
            "leaderElection",
            "",
            LEADER_ELECTION_FIELDS,
            "leaderElection",
        )? {
            self.bool(le, "leaderElect", "leaderElection")?;
            for key in ["leaseDuration", "renewDeadline", "retryPeriod"] {
                self.duration(le, key, "leaderElection")?;
            }
            for key in ["resourceLock", "resourceName", "resourceNamespace"] {
                self.string(le, key, "leaderElection")?;
            }
        }
        if let Some(cc) = self.section(
            top,
            "clientConnection",
            "",
            CLIENT_CONNECTION_FIELDS,
            "clientConnection",
        )? {
            for key in ["kubeconfig", "acceptContentTypes", "contentType"] {
                self.string(cc, key, "clientConnection")?;
            }
            if let Some(q) = cc.get("qps").filter(|v| !v.is_null()) {
                if q.as_f64().is_none() {
                    return Err(self.err(
                        "clientConnection.qps",
                        format!("expected a number, found {q}"),
                    ));
                }
            }
            self.int(cc, "burst", "clientConnection", 0, i64::from(i32::MAX))?;
        }
        Ok(())
    }

    /// Extenders: kube-scheduler calls them over HTTP to filter and score nodes, which the
    /// simulator cannot do; one that filters or scores is refused (its predictions would be
    /// wrong without a word), one that only binds or preempts changes no node choice.
    fn extenders(&self, v: &Value) -> Result<(), SchedulerConfigError> {
        for (i, e) in self.array(v, "extenders")?.iter().enumerate() {
            let ep = format!("extenders[{i}]");
            let obj = self.object(e, &ep)?;
            self.fields(obj, &ep, EXTENDER_FIELDS, "an extender")?;
            self.section(
                obj,
                "tlsConfig",
                &ep,
                EXTENDER_TLS_FIELDS,
                "an extender's tlsConfig",
            )?;
            if let Some(list) = obj.get("managedResources").filter(|v| !v.is_null()) {
                let mp = format!("{ep}.managedResources");
                for (j, m) in self.array(list, &mp)?.iter().enumerate() {
                    let rp = format!("{mp}[{j}]");
                    self.fields(
                        self.object(m, &rp)?,
                        &rp,
                        &["name", "ignoredByScheduler"],
                        "a managed resource",
                    )?;
                }
            }
            self.duration(obj, "httpTimeout", &ep)?;
            let url = self.string(obj, "urlPrefix", &ep)?.unwrap_or("");
            for (verb, does) in [("filterVerb", "filters"), ("prioritizeVerb", "scores")] {
                if self.string(obj, verb, &ep)?.is_some_and(|v| !v.is_empty()) {
                    return Err(self.err(
                        format!("{ep}.{verb}"),
                        format!(
                            "the extender at {url:?} {does} nodes for kube-scheduler over HTTP, which the simulator cannot do, so its predicted destinations would not be kube-scheduler's; give --scheduler-config a copy of this file without the extender (predictions then leave it out, as they do without --scheduler-config)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn object<'v>(&self, v: &'v Value, path: &str) -> Result<&'v Object, SchedulerConfigError> {
        v.as_object()
            .ok_or_else(|| self.err(path, format!("expected a mapping, found {v}")))
    }

    fn array<'v>(&self, v: &'v Value, path: &str) -> Result<&'v [Value], SchedulerConfigError> {
        v.as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| self.err(path, format!("expected a list, found {v}")))
    }

    /// An integer field within `min..=max`, absent: None.
    fn int(
        &self,
        obj: &Object,
        key: &str,
        path: &str,
        min: i64,
        max: i64,
    ) -> Result<Option<i64>, SchedulerConfigError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_i64() {
                Some(n) if (min..=max).contains(&n) => Ok(Some(n)),
                _ if max >= i64::from(i32::MAX) => Err(self.err(
                    join(path, key),
                    format!("{v} is not allowed; use a whole number of at least {min}"),
                )),
                _ => Err(self.err(
                    join(path, key),
                    format!("{v} is not allowed; use a whole number from {min} to {max}"),
                )),
            },
        }
    }

    fn string<'v>(
        &self,
        obj: &'v Object,
        key: &str,
        path: &str,
    ) -> Result<Option<&'v str>, SchedulerConfigError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(join(path, key), format!("expected a string, found {v}"))),
        }
    }

    /// Checks that a plugin name is one kube-scheduler has (and so one the simulator models
    /// or knows not to score).
    fn known_plugin(&self, name: &str, path: &str) -> Result<(), SchedulerConfigError> {
        if name == "*" || SCORE_PLUGINS.contains(&name) || NON_SCORE_PLUGINS.contains(&name) {
            return Ok(());
        }
        Err(self.err(
            path,
            format!(
                "{name:?} is not a kube-scheduler plugin the simulator knows; its score cannot be predicted. The score plugins are {}; remove it from this file to predict without it",
                SCORE_PLUGINS.join(", ")
            ),
        ))
    }

    /// Applies one plugin set (`plugins.multiPoint` or `plugins.score`) to the weights:
    /// disabled first (`*` disables every default), then enabled with their weights (1 when
    /// not given).
    fn plugin_set(
        &self,
        set: &Value,
        path: &str,
        p: &mut ScoreProfile,
    ) -> Result<(), SchedulerConfigError> {
        let set = self.object(set, path)?;
        if let Some(disabled) = set.get("disabled").filter(|v| !v.is_null()) {
            for (i, d) in self
                .array(disabled, &format!("{path}.disabled"))?
                .iter()
                .enumerate()
            {
                let dp = format!("{path}.disabled[{i}]");
                let name = self
                    .string(self.object(d, &dp)?, "name", &dp)?
                    .ok_or_else(|| {
                        self.err(
                            format!("{dp}.name"),
                            "missing; name the plugin to disable, or \"*\" for all",
                        )
                    })?;
                self.known_plugin(name, &format!("{dp}.name"))?;
                if name == "*" {
                    for plugin in SCORE_PLUGINS {
                        p.set_weight(plugin, 0);
                    }
                } else {
                    p.set_weight(name, 0);
                }
            }
        }
        if let Some(enabled) = set.get("enabled").filter(|v| !v.is_null()) {
            for (i, e) in self
                .array(enabled, &format!("{path}.enabled"))?
                .iter()
                .enumerate()
            {
                let ep = format!("{path}.enabled[{i}]");
                let obj = self.object(e, &ep)?;
                let name = self.string(obj, "name", &ep)?.ok_or_else(|| {
                    self.err(format!("{ep}.name"), "missing; name the plugin to enable")
                })?;
                if name == "*" {
                    return Err(self.err(
                        format!("{ep}.name"),
                        "\"*\" can only disable plugins; name the plugin to enable",
                    ));
                }
                self.known_plugin(name, &format!("{ep}.name"))?;
                let weight = self.int(obj, "weight", &ep, 0, i64::from(i32::MAX))?;
                // kube-scheduler scores a plugin enabled without a weight with weight 1
                let weight = weight.filter(|w| *w > 0).unwrap_or(1);
                p.set_weight(name, weight);
            }
        }
        Ok(())
    }

    /// The shape of one extension point's plugin set: `enabled` and `disabled` lists of
    /// `{name, weight}`.
    fn plugin_set_shape(&self, set: &Value, path: &str) -> Result<(), SchedulerConfigError> {
        let set = self.object(set, path)?;
        self.fields(set, path, &["enabled", "disabled"], "a plugin set")?;
        for list in ["enabled", "disabled"] {
            let Some(v) = set.get(list).filter(|v| !v.is_null()) else {
                continue;
            };
            let lp = format!("{path}.{list}");
            for (i, e) in self.array(v, &lp)?.iter().enumerate() {
                let ep = format!("{lp}[{i}]");
                let obj = self.object(e, &ep)?;
                self.fields(obj, &ep, &["name", "weight"], "a plugin entry")?;
                self.string(obj, "name", &ep)?;
                self.int(obj, "weight", &ep, 0, i64::from(i32::MAX))?;
            }
        }
        Ok(())
    }

    /// The names listed under `plugins.<point>.<list>`.
    fn names<'v>(plugins: &'v Object, point: &str, list: &str) -> Vec<&'v str> {
        plugins
            .get(point)
            .and_then(|s| s.get(list))
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|e| e.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Filter plugins: one the simulator does not know is refused (kube-scheduler would refuse
    /// nodes the prediction picks); simulated ones disabled are a warning (the simulator
    /// still applies them: it may find no place where kube-scheduler finds one).
    fn filters(
        &self,
        plugins: &Object,
        pp: &str,
        notes: &mut Vec<String>,
    ) -> Result<(), SchedulerConfigError> {
        for (i, name) in Self::names(plugins, "filter", "enabled")
            .into_iter()
            .enumerate()
        {
            if !SCORE_PLUGINS.contains(&name) && !NON_SCORE_PLUGINS.contains(&name) {
                return Err(self.err(
                    format!("{pp}.filter.enabled[{i}].name"),
                    format!(
                        "{name:?} is not a kube-scheduler filter plugin the simulator knows, so it cannot tell which nodes that filter refuses; remove it from the copy given to --scheduler-config to predict without it"
                    ),
                ));
            }
        }
        let mut disabled: Vec<&str> = Vec::new();
        let mut enabled: Vec<&str> = Vec::new();
        for point in ["multiPoint", "filter"] {
            for name in Self::names(plugins, point, "disabled") {
                if name == "*" {
                    disabled.extend_from_slice(SIMULATED_FILTERS);
                } else {
                    disabled.push(name);
                }
            }
            enabled.extend(Self::names(plugins, point, "enabled"));
        }
        let off: Vec<&str> = SIMULATED_FILTERS
            .iter()
            .copied()
            .filter(|f| disabled.contains(f) && !enabled.contains(f))
            .collect();
        if !off.is_empty() {
            notes.push(format!(
                "{pp}: the filter plugin(s) {} are disabled, but the simulator still applies them: it may find no place for a pod that kube-scheduler would place, and then keeps the pod where it is",
                off.join(", ")
            ));
        }
        Ok(())
    }

    fn profile(
        &self,
        obj: &Object,
        path: &str,
        notes: &mut Vec<String>,
    ) -> Result<ScoreProfile, SchedulerConfigError> {
        let mut p = ScoreProfile::default();
        if let Some(plugins) = self.section(obj, "plugins", path, PLUGIN_POINTS, "plugins")? {
            let pp = format!("{path}.plugins");
            for point in PLUGIN_POINTS {
                if let Some(set) = plugins.get(*point).filter(|v| !v.is_null()) {
                    self.plugin_set_shape(set, &format!("{pp}.{point}"))?;
                }
            }
            for point in ["multiPoint", "score"] {
                if let Some(set) = plugins.get(point).filter(|v| !v.is_null()) {
                    self.plugin_set(set, &format!("{pp}.{point}"), &mut p)?;
                }
            }
            self.filters(plugins, &pp, notes)?;
        }
        if let Some(configs) = obj.get("pluginConfig").filter(|v| !v.is_null()) {
            let cp = format!("{path}.pluginConfig");
            let mut seen: Vec<&str> = Vec::new();
            for (i, c) in self.array(configs, &cp)?.iter().enumerate() {
                let ip = format!("{cp}[{i}]");
                let c = self.object(c, &ip)?;
                self.fields(c, &ip, &["name", "args"], "a pluginConfig entry")?;
                let name = self.string(c, "name", &ip)?.ok_or_else(|| {
                    self.err(
                        format!("{ip}.name"),
                        "missing; name the plugin these args are for",
                    )
                })?;
                if seen.contains(&name) {
                    return Err(self.err(
                        format!("{ip}.name"),
                        format!("{name:?} has args twice; merge them into one entry"),
                    ));
                }
                seen.push(name);
                let ap = format!("{ip}.args");
                let empty = Object::new();
                let args = match c.get("args") {
                    None | Some(Value::Null) => &empty,
                    Some(a) => self.object(a, &ap)?,
                };
                self.args_type_meta(name, args, &ap)?;
                self.plugin_args(name, args, &ap, &ip, &mut p, notes)?;
            }
        }
        Ok(p)
    }

    /// The TypeMeta and fields of a known plugin's args.
    fn args_type_meta(
        &self,
        name: &str,
        args: &Object,
        ap: &str,
    ) -> Result<(), SchedulerConfigError> {
        if let Some((_, known)) = ARGS_FIELDS.iter().find(|(n, _)| *n == name) {
            let mut all: Vec<&str> = vec!["apiVersion", "kind"];
            all.extend_from_slice(known);
            self.fields(args, ap, &all, &format!("{name}'s args"))?;
            let kind = format!("{name}Args");
            match args.get("kind") {
                None | Some(Value::Null) => {}
                Some(Value::String(k)) if *k == kind => {}
                Some(other) => {
                    return Err(self.err(
                        format!("{ap}.kind"),
                        format!(
                            "{other} does not match the plugin; set it to {kind:?} or leave it out"
                        ),
                    ))
                }
            }
            match args.get("apiVersion") {
                None | Some(Value::Null) => {}
                Some(Value::String(v)) if v == API_VERSION => {}
                Some(other) => {
                    return Err(self.err(
                        format!("{ap}.apiVersion"),
                        format!(
                            "{other} is not allowed; set it to {API_VERSION:?} or leave it out"
                        ),
                    ))
                }
            }
        }
        Ok(())
    }

    /// One pluginConfig entry's args, read into the profile where the simulator follows
    /// them, checked as kube-scheduler checks them where it does not.
    fn plugin_args(
        &self,
        name: &str,
        args: &Object,
        ap: &str,
        ip: &str,
        p: &mut ScoreProfile,
        notes: &mut Vec<String>,
    ) -> Result<(), SchedulerConfigError> {
        match name {
            "NodeResourcesFit" => self.fit_args(args, ap, p, notes)?,
            "DefaultPreemption" => {
                let pct = self.int(args, "minCandidateNodesPercentage", ap, 0, 100)?;
                let abs = self.int(
                    args,
                    "minCandidateNodesAbsolute",
                    ap,
                    0,
                    i64::from(i32::MAX),
                )?;
                if pct.unwrap_or(10) == 0 && abs.unwrap_or(100) == 0 {
                    return Err(self.err(
                        format!("{ap}.minCandidateNodesAbsolute"),
                        "minCandidateNodesPercentage and minCandidateNodesAbsolute are both 0; give at least one of them a value above 0",
                    ));
                }
            }
            "VolumeBinding" => {
                self.int(args, "bindTimeoutSeconds", ap, 0, i64::MAX)?;
                if let Some(shape) = args.get("shape").filter(|v| !v.is_null()) {
                    self.shape(shape, &format!("{ap}.shape"))?;
                }
            }
            "DynamicResources" => {
                self.duration(args, "filterTimeout", ap)?;
                self.duration(args, "bindingTimeout", ap)?;
            }
            "NodeAffinity" => {
                if args.get("addedAffinity").is_some_and(|v| !v.is_null()) {
                    return Err(self.err(
                        format!("{ap}.addedAffinity"),
                        "kube-scheduler adds this node affinity to every pod of the profile, which the simulator cannot do, so it would predict nodes kube-scheduler refuses; give --scheduler-config a copy of this file without addedAffinity (predictions then leave it out)",
                    ));
                }
            }
            "NodeResourcesBalancedAllocation" => {
                if let Some(rs) = args.get("resources").filter(|v| !v.is_null()) {
                    p.balanced_resources = self.resources(rs, &format!("{ap}.resources"))?;
                }
            }
            "InterPodAffinity" => {
                if let Some(w) = self.int(args, "hardPodAffinityWeight", ap, 0, 100)? {
                    p.hard_pod_affinity_weight = w;
                }
                match args.get("ignorePreferredTermsOfExistingPods") {
                    None | Some(Value::Null) => {}
                    Some(Value::Bool(b)) => p.ignore_preferred_terms_of_existing_pods = *b,
                    Some(v) => {
                        return Err(self.err(
                            format!("{ap}.ignorePreferredTermsOfExistingPods"),
                            format!("expected true or false, found {v}"),
                        ))
                    }
                }
            }
            "PodTopologySpread" => self.spread_args(args, ap, p)?,
            other => self.known_plugin(other, &format!("{ip}.name"))?,
        }
        Ok(())
    }

    /// A list of `{name, weight}` resources, defaulted as kube-scheduler defaults it (an
    /// empty list: cpu and memory, weight 1; a weight of 0 or none: 1) and each weight then
    /// 1..=100 (kube-scheduler's range).
    fn resources(&self, v: &Value, path: &str) -> Result<Vec<ResourceSpec>, SchedulerConfigError> {
        let list = self.array(v, path)?;
        if list.is_empty() {
            return Ok(default_resources());
        }
        let mut out: Vec<ResourceSpec> = Vec::new();
        for (i, r) in list.iter().enumerate() {
            let rp = format!("{path}[{i}]");
            let obj = self.object(r, &rp)?;
            self.fields(obj, &rp, &["name", "weight"], "a resource")?;
            let name = self
                .string(obj, "name", &rp)?
                .filter(|n| !n.is_empty())
                .ok_or_else(|| {
                    self.err(
                        format!("{rp}.name"),
                        "missing; name a resource such as cpu or memory",
                    )
                })?;
            if out.iter().any(|r| &*r.name == name) {
                return Err(self.err(
                    format!("{rp}.name"),
                    format!("{name:?} is listed twice; list each resource once"),
                ));
            }
            let weight = match self.int(obj, "weight", &rp, 0, 100)? {
                None | Some(0) => 1,
                Some(w) => w,
            };
            out.push(ResourceSpec::new(name, weight));
        }
        Ok(out)
    }

    fn fit_args(
        &self,
        args: &Object,
        ap: &str,
        p: &mut ScoreProfile,
        notes: &mut Vec<String>,
    ) -> Result<(), SchedulerConfigError> {
        let ignored = self.strings(args, "ignoredResources", ap)?;
        let groups = self.strings(args, "ignoredResourceGroups", ap)?;
        if !ignored.is_empty() || !groups.is_empty() {
            let all: Vec<&str> = ignored.iter().chain(&groups).copied().collect();
            notes.push(format!(
                "{ap}: NodeResourcesFit does not check {} when it filters nodes, but the simulator still does: it may find no place for a pod that kube-scheduler would place, and then keeps the pod where it is",
                all.join(", ")
            ));
        }
        let Some(s) = self.section(
            args,
            "scoringStrategy",
            ap,
            &["type", "resources", "requestedToCapacityRatio"],
            "scoringStrategy",
        )?
        else {
            return Ok(());
        };
        let sp = format!("{ap}.scoringStrategy");
        if let Some(rs) = s.get("resources").filter(|v| !v.is_null()) {
            p.fit_resources = self.resources(rs, &format!("{sp}.resources"))?;
        } else {
            p.fit_resources = default_resources();
        }
        p.fit_strategy = match self.string(s, "type", &sp)?.unwrap_or("LeastAllocated") {
            "LeastAllocated" => ScoringStrategy::LeastAllocated,
            "MostAllocated" => ScoringStrategy::MostAllocated,
            "RequestedToCapacityRatio" => {
                let rp = format!("{sp}.requestedToCapacityRatio");
                let shape = self
                    .section(s, "requestedToCapacityRatio", &sp, &["shape"], "requestedToCapacityRatio")?
                    .and_then(|r| r.get("shape").filter(|v| !v.is_null()))
                    .ok_or_else(|| self.err(format!("{rp}.shape"), "missing; RequestedToCapacityRatio needs a shape of {utilization, score} points"))?;
                ScoringStrategy::RequestedToCapacityRatio(self.shape(shape, &format!("{rp}.shape"))?)
            }
            other => {
                return Err(self.err(
                    format!("{sp}.type"),
                    format!("{other:?} is not a scoring strategy; use LeastAllocated, MostAllocated or RequestedToCapacityRatio"),
                ))
            }
        };
        Ok(())
    }

    /// RequestedToCapacityRatio's shape: utilization 0..=100 increasing, score 0..=10.
    fn shape(&self, v: &Value, path: &str) -> Result<Vec<(i64, i64)>, SchedulerConfigError> {
        let points = self.array(v, path)?;
        if points.is_empty() {
            return Err(self.err(path, "empty; give at least one {utilization, score} point"));
        }
        let mut out: Vec<(i64, i64)> = Vec::new();
        for (i, pt) in points.iter().enumerate() {
            let pp = format!("{path}[{i}]");
            let obj = self.object(pt, &pp)?;
            self.fields(obj, &pp, &["utilization", "score"], "a shape point")?;
            let u = self.int(obj, "utilization", &pp, 0, 100)?.unwrap_or(0);
            let s = self
                .int(obj, "score", &pp, 0, MAX_CUSTOM_PRIORITY_SCORE)?
                .unwrap_or(0);
            if out.last().is_some_and(|&(pu, _)| u <= pu) {
                return Err(self.err(
                    format!("{pp}.utilization"),
                    "utilization values must be increasing; sort the points by utilization and give each value once",
                ));
            }
            out.push((u, s));
        }
        Ok(out)
    }

    fn spread_args(
        &self,
        args: &Object,
        ap: &str,
        p: &mut ScoreProfile,
    ) -> Result<(), SchedulerConfigError> {
        let typ = self.string(args, "defaultingType", ap)?.unwrap_or("System");
        let list = args.get("defaultConstraints").filter(|v| !v.is_null());
        match typ {
            "System" => {
                if list.is_some_and(|l| l.as_array().is_none_or(|a| !a.is_empty())) {
                    return Err(self.err(
                        format!("{ap}.defaultConstraints"),
                        "must be empty with defaultingType System; set defaultingType: List to use your own",
                    ));
                }
                p.default_constraints = DefaultConstraints::System;
            }
            "List" => {
                let mut out: Vec<TopologySpreadConstraint> = Vec::new();
                if let Some(l) = list {
                    let lp = format!("{ap}.defaultConstraints");
                    for (i, c) in self.array(l, &lp)?.iter().enumerate() {
                        let cp = format!("{lp}[{i}]");
                        let constraint = self.default_constraint(c, &cp, &out)?;
                        out.push(constraint);
                    }
                }
                p.default_constraints = DefaultConstraints::List(out);
            }
            other => {
                return Err(self.err(
                    format!("{ap}.defaultingType"),
                    format!("{other:?} is not allowed; use System or List"),
                ))
            }
        }
        Ok(())
    }

    /// One of the `defaultConstraints` of PodTopologySpread's args, checked against the
    /// ones before it (`out`).
    fn default_constraint(
        &self,
        c: &Value,
        cp: &str,
        out: &[TopologySpreadConstraint],
    ) -> Result<TopologySpreadConstraint, SchedulerConfigError> {
        let obj = self.object(c, cp)?;
        self.fields(
            obj,
            cp,
            TOPOLOGY_SPREAD_FIELDS,
            "a topology spread constraint",
        )?;
        let max_skew = self
            .int(obj, "maxSkew", cp, 1, i64::from(i32::MAX))?
            .ok_or_else(|| {
                self.err(
                    format!("{cp}.maxSkew"),
                    "missing; give a whole number of at least 1",
                )
            })?;
        let key = self
            .string(obj, "topologyKey", cp)?
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                self.err(
                    format!("{cp}.topologyKey"),
                    "missing; name a node label such as topology.kubernetes.io/zone",
                )
            })?;
        let when = match self.string(obj, "whenUnsatisfiable", cp)? {
            Some("ScheduleAnyway") => WhenUnsatisfiable::ScheduleAnyway,
            Some("DoNotSchedule") => WhenUnsatisfiable::DoNotSchedule,
            other => {
                let found =
                    other.map_or("missing".to_string(), |o| format!("{o:?} is not allowed"));
                return Err(self.err(
                    format!("{cp}.whenUnsatisfiable"),
                    format!("{found}; use ScheduleAnyway or DoNotSchedule"),
                ));
            }
        };
        if obj.get("labelSelector").is_some_and(|v| !v.is_null()) {
            return Err(self.err(
                format!("{cp}.labelSelector"),
                "not allowed in default constraints (the pod's Services and controller give the selector); remove it",
            ));
        }
        if out
            .iter()
            .any(|o| *o.topology_key == *key && o.when_unsatisfiable == when)
        {
            return Err(self.err(
                cp.to_string(),
                format!("a second constraint on {key:?} with the same whenUnsatisfiable; keep one"),
            ));
        }
        let min_domains = self.int(obj, "minDomains", cp, 1, i64::from(i32::MAX))?;
        if min_domains.is_some() && when != WhenUnsatisfiable::DoNotSchedule {
            return Err(self.err(
                format!("{cp}.minDomains"),
                "only allowed with whenUnsatisfiable: DoNotSchedule; remove it or change whenUnsatisfiable",
            ));
        }
        let policy = |key: &str, default: InclusionPolicy| match self.string(obj, key, cp)? {
            None => Ok(default),
            Some("Honor") => Ok(InclusionPolicy::Honor),
            Some("Ignore") => Ok(InclusionPolicy::Ignore),
            Some(other) => Err(self.err(
                format!("{cp}.{key}"),
                format!("{other:?} is not allowed; use Honor or Ignore"),
            )),
        };
        let node_affinity_policy = policy("nodeAffinityPolicy", InclusionPolicy::Honor)?;
        let node_taints_policy = policy("nodeTaintsPolicy", InclusionPolicy::Ignore)?;
        let match_label_keys = self
            .strings(obj, "matchLabelKeys", cp)?
            .into_iter()
            .map(Into::into)
            .collect();
        Ok(TopologySpreadConstraint {
            max_skew: max_skew as i32,
            topology_key: key.into(),
            when_unsatisfiable: when,
            label_selector: None,
            min_domains: min_domains.map(|m| m as i32),
            node_affinity_policy,
            node_taints_policy,
            match_label_keys,
        })
    }
}

#[cfg(test)]
mod tests;
