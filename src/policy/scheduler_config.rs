//! `--scheduler-config FILE`: a KubeSchedulerConfiguration (`kubescheduler.config.k8s.io/v1`),
//! read for what changes where kube-scheduler puts a pod: each profile's score plugins
//! (enabled, disabled, weights, at `multiPoint` and at `score`) and the args of
//! NodeResourcesFit (`scoringStrategy`), NodeResourcesBalancedAllocation (`resources`),
//! InterPodAffinity (`hardPodAffinityWeight`, `ignorePreferredTermsOfExistingPods`) and
//! PodTopologySpread (`defaultingType`, `defaultConstraints`). Other fields (leader election,
//! client connection, filter-only plugins) are accepted and do not change predictions.
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

pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";
pub const KIND: &str = "KubeSchedulerConfiguration";
/// The profile kube-scheduler gives pods that name no scheduler.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

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

/// An invalid scheduler configuration: the file, the path of the offending field and what to
/// do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("scheduler config {file}: {path}: {message}")]
pub struct SchedulerConfigError {
    pub file: String,
    pub path: String,
    pub message: String,
}

/// The profiles of a KubeSchedulerConfiguration, by schedulerName, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfig {
    pub profiles: Vec<(String, Arc<ScoreProfile>)>,
}

impl SchedulerConfig {
    /// Reads and validates a KubeSchedulerConfiguration file.
    pub fn load(path: &Path) -> Result<SchedulerConfig, SchedulerConfigError> {
        let file = path.display().to_string();
        let text = crate::input::read_utf8_file(path, crate::input::POLICY_LIMIT)
            .map_err(|e| err(&file, "(file)", format!("cannot read the file: {e}")))?;
        Self::from_yaml(&file, &text)
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
        let mut profiles: Vec<(String, Arc<ScoreProfile>)> = Vec::new();
        let list = match top.get("profiles") {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => r.array(v, "profiles")?.to_vec(),
        };
        for (i, p) in list.iter().enumerate() {
            let path = format!("profiles[{i}]");
            let obj = r.object(p, &path)?;
            let name = match obj.get("schedulerName") {
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
            let profile = r.profile(obj, &path)?;
            profiles.push((name, Arc::new(profile)));
        }
        if profiles.is_empty() {
            // kube-scheduler's defaulting: one default profile
            profiles.push((
                DEFAULT_SCHEDULER_NAME.to_string(),
                Arc::new(ScoreProfile::default()),
            ));
        }
        Ok(SchedulerConfig { profiles })
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

struct Reader<'f> {
    file: &'f str,
}

impl Reader<'_> {
    fn err(&self, path: impl Into<String>, message: impl Into<String>) -> SchedulerConfigError {
        err(self.file, path, message)
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
                _ => Err(self.err(
                    format!("{path}.{key}"),
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
            Some(v) => Err(self.err(
                format!("{path}.{key}"),
                format!("expected a string, found {v}"),
            )),
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

    fn profile(&self, obj: &Object, path: &str) -> Result<ScoreProfile, SchedulerConfigError> {
        let mut p = ScoreProfile::default();
        if let Some(plugins) = obj.get("plugins").filter(|v| !v.is_null()) {
            let pp = format!("{path}.plugins");
            let plugins = self.object(plugins, &pp)?;
            for point in ["multiPoint", "score"] {
                if let Some(set) = plugins.get(point).filter(|v| !v.is_null()) {
                    self.plugin_set(set, &format!("{pp}.{point}"), &mut p)?;
                }
            }
        }
        if let Some(configs) = obj.get("pluginConfig").filter(|v| !v.is_null()) {
            let cp = format!("{path}.pluginConfig");
            let mut seen: Vec<&str> = Vec::new();
            for (i, c) in self.array(configs, &cp)?.iter().enumerate() {
                let ip = format!("{cp}[{i}]");
                let c = self.object(c, &ip)?;
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
                match name {
                    "NodeResourcesFit" => self.fit_args(args, &ap, &mut p)?,
                    "NodeResourcesBalancedAllocation" => {
                        if let Some(rs) = args.get("resources").filter(|v| !v.is_null()) {
                            p.balanced_resources =
                                self.resources(rs, &format!("{ap}.resources"))?;
                        }
                    }
                    "InterPodAffinity" => {
                        if let Some(w) = self.int(args, "hardPodAffinityWeight", &ap, 0, 100)? {
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
                    "PodTopologySpread" => self.spread_args(args, &ap, &mut p)?,
                    other => self.known_plugin(other, &format!("{ip}.name"))?,
                }
            }
        }
        Ok(p)
    }

    /// A list of `{name, weight}` resources, each weight 1..=100 (kube-scheduler's range).
    fn resources(&self, v: &Value, path: &str) -> Result<Vec<ResourceSpec>, SchedulerConfigError> {
        let mut out: Vec<ResourceSpec> = Vec::new();
        for (i, r) in self.array(v, path)?.iter().enumerate() {
            let rp = format!("{path}[{i}]");
            let obj = self.object(r, &rp)?;
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
            let weight = self.int(obj, "weight", &rp, 1, 100)?.unwrap_or(1);
            out.push(ResourceSpec::new(name, weight));
        }
        Ok(out)
    }

    fn fit_args(
        &self,
        args: &Object,
        ap: &str,
        p: &mut ScoreProfile,
    ) -> Result<(), SchedulerConfigError> {
        let Some(s) = args.get("scoringStrategy").filter(|v| !v.is_null()) else {
            return Ok(());
        };
        let sp = format!("{ap}.scoringStrategy");
        let s = self.object(s, &sp)?;
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
                let shape = s
                    .get("requestedToCapacityRatio")
                    .filter(|v| !v.is_null())
                    .map(|r| self.object(r, &rp))
                    .transpose()?
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
                        let obj = self.object(c, &cp)?;
                        let max_skew = self
                            .int(obj, "maxSkew", &cp, 1, i64::from(i32::MAX))?
                            .ok_or_else(|| {
                                self.err(
                                    format!("{cp}.maxSkew"),
                                    "missing; give a whole number of at least 1",
                                )
                            })?;
                        let key = self
                            .string(obj, "topologyKey", &cp)?
                            .filter(|k| !k.is_empty())
                            .ok_or_else(|| self.err(format!("{cp}.topologyKey"), "missing; name a node label such as topology.kubernetes.io/zone"))?;
                        let when = match self.string(obj, "whenUnsatisfiable", &cp)? {
                            Some("ScheduleAnyway") => WhenUnsatisfiable::ScheduleAnyway,
                            Some("DoNotSchedule") => WhenUnsatisfiable::DoNotSchedule,
                            other => {
                                let found = other.map_or("missing".to_string(), |o| {
                                    format!("{o:?} is not allowed")
                                });
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
                                cp.clone(),
                                format!("a second constraint on {key:?} with the same whenUnsatisfiable; keep one"),
                            ));
                        }
                        out.push(TopologySpreadConstraint {
                            max_skew: max_skew as i32,
                            topology_key: key.into(),
                            when_unsatisfiable: when,
                            label_selector: None,
                            min_domains: None,
                            node_affinity_policy: InclusionPolicy::Honor,
                            node_taints_policy: InclusionPolicy::Ignore,
                            match_label_keys: Vec::new(),
                        });
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<SchedulerConfig, SchedulerConfigError> {
        SchedulerConfig::from_yaml("sched.yaml", text)
    }

    const HEAD: &str =
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

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
            ("profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 0}]}}\n",
             "scheduler config sched.yaml: profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: 0 is not allowed; use a whole number from 1 to 100"),
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
}
