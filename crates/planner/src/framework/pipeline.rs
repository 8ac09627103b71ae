//! Profiles built from a validated policy through the plugin registry: each profile's evictor,
//! its eviction order (the `sort` extension point) and its deschedule and balance plugins, with
//! every plugin's args decoded and validated.

use super::ArgsError;
use super::{Built, EvictorPlugin, ExtensionPoint, Limits, Plugin, Registry, SortPlugin};
use crate::labels::Selector;
use crate::policy::{EvictionBudget, MetricsProvider, Policy, PolicyError, Profile};
use crate::snapshot::usage::{UsageNeed, UsageSource};

/// One profile of the policy, built: its evictor, its order and its strategy plugins.
#[derive(Debug)]
pub struct ProfilePipeline {
    /// The profile's name.
    pub name: String,
    /// The profile's evictor (filter and preEvictionFilter: DefaultEvictor).
    pub evictor: Box<dyn EvictorPlugin>,
    /// The order the profile's plugins take candidates in (`plugins.sort`); None: upstream's.
    pub sort: Option<Box<dyn SortPlugin>>,
    /// The deschedule plugins, in the policy's order; they run before every balance plugin.
    pub deschedule: Vec<Box<dyn Plugin>>,
    /// The balance plugins, in the policy's order.
    pub balance: Vec<Box<dyn Plugin>>,
}

/// Everything a planning cycle needs from the policy.
#[derive(Debug)]
pub struct Pipeline {
    /// The profiles, in the policy's order.
    pub profiles: Vec<ProfilePipeline>,
    /// The policy's eviction limits (per node, per namespace, per cycle).
    pub limits: Limits,
    /// The policy's `nodeSelector`: the nodes planned on.
    pub node_selector: Selector,
    /// The policy's `metricsProviders`, with the deprecated `metricsCollector.enabled`
    /// turned into a KubernetesMetrics entry.
    pub metrics_providers: Vec<MetricsProvider>,
    /// Predict every planned eviction's destination with the placement simulator, even when
    /// no evictor needs it (`--predict-destinations`). The simulator always runs for
    /// profiles with `nodeFit` or `placementCheck`.
    pub predict_destinations: bool,
    /// The scheduler profile the simulator scores destinations with (`--scheduler-config`);
    /// None: kube-scheduler's default profile.
    pub scheduler_profile: Option<std::sync::Arc<crate::sim::ScoreProfile>>,
    /// How the simulator sees evicted pods while their replacements are scheduled: by
    /// default still terminating for their grace period (the policy's `gracePeriodSeconds`,
    /// else each pod's own), as with a real kubelet; `--termination-model instant` takes them
    /// gone at once.
    pub termination: crate::sim::Termination,
    /// The policy's `evictionBudgets`: budgets of evictions over a period, each with a scope
    /// and optionally a time window; every one that applies holds.
    pub budgets: Vec<EvictionBudget>,
}

/// Builds one profile of a policy (`profiles[index]`) through the registry.
struct ProfileBuilder<'p> {
    profile: &'p Profile,
    index: usize,
    file: &'p str,
    registry: &'p Registry,
    providers: &'p [MetricsProvider],
}

impl ProfileBuilder<'_> {
    fn build(&self) -> Result<ProfilePipeline, PolicyError> {
        Ok(ProfilePipeline {
            name: self.profile.name.clone(),
            evictor: self.evictor()?,
            sort: self.sort()?,
            deschedule: self.strategies(self.profile.plugins.deschedule.effective())?,
            balance: self.strategies(self.profile.plugins.balance.effective())?,
        })
    }

    fn args_path(&self, ci: usize) -> String {
        format!("profiles[{}].pluginConfig[{ci}].args", self.index)
    }

    /// An args error at its place in the policy.
    fn at(&self, ci: usize, e: ArgsError) -> PolicyError {
        let base = self.args_path(ci);
        let path = if e.path.is_empty() {
            base
        } else {
            format!("{base}.{}", e.path)
        };
        PolicyError::new(self.file, path, e.message)
    }

    fn evictor(&self) -> Result<Box<dyn EvictorPlugin>, PolicyError> {
        let spec = self.registry.evictor();
        let (ci, cfg) = self
            .profile
            .plugin_config(spec.name)
            .expect("defaulting adds the evictor's pluginConfig");
        match spec.build(&cfg.args).map_err(|e| self.at(ci, e))? {
            Built::Evictor(e) => Ok(e),
            other => unreachable!("the filter plugin builds an evictor, not {other:?}"),
        }
    }

    fn sort(&self) -> Result<Option<Box<dyn SortPlugin>>, PolicyError> {
        let mut sort = None;
        for name in self.profile.plugins.sort.effective() {
            let Some(spec) = self
                .registry
                .get(&name)
                .filter(|s| s.implements(ExtensionPoint::Sort))
            else {
                continue;
            };
            // Validation admits a sort plugin without a pluginConfig only when every one
            // of its args has a default.
            let built = match self.profile.plugin_config(&name) {
                Some((ci, cfg)) => spec.build(&cfg.args).map_err(|e| self.at(ci, e))?,
                None => spec
                    .build(&serde_json::Value::Null)
                    .expect("the args of a plugin enabled without pluginConfig all have defaults"),
            };
            if let Built::Sort(s) = built {
                sort = Some(s);
            }
        }
        Ok(sort)
    }

    /// The deschedule or balance plugins enabled, in order.
    fn strategies(&self, names: Vec<String>) -> Result<Vec<Box<dyn Plugin>>, PolicyError> {
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            // Validation requires a pluginConfig for every enabled plugin, unless all
            // of its args have defaults.
            let Some((ci, cfg)) = self.profile.plugin_config(&name) else {
                match self
                    .registry
                    .get(&name)
                    .map(|s| (s, s.build(&serde_json::Value::Null)))
                {
                    Some((spec, Ok(Built::Strategy(p)))) if spec.args_optional => {
                        out.push(p);
                        continue;
                    }
                    _ => unreachable!(
                        "validation requires a pluginConfig for {name}, enabled without one"
                    ),
                }
            };
            let plugin = match self.registry.get(&name) {
                Some(spec) => match spec.build(&cfg.args).map_err(|e| self.at(ci, e))? {
                    Built::Strategy(p) => p,
                    other => {
                        unreachable!("validation admits strategy plugins only here, not {other:?}")
                    }
                },
                None => {
                    return Err(self.at(ci, ArgsError::new("", format!("unknown plugin {name:?}"))))
                }
            };
            self.check_usage_sources(plugin.as_ref(), &name, ci)?;
            out.push(plugin);
        }
        Ok(out)
    }

    /// Every source of usage the plugin reads is configured in the policy.
    fn check_usage_sources(
        &self,
        plugin: &dyn Plugin,
        name: &str,
        ci: usize,
    ) -> Result<(), PolicyError> {
        for need in plugin.usage_needs() {
            let (source, what) = match need {
                UsageNeed::MetricsServer { .. } => (
                    UsageSource::MetricsServer,
                    "add `metricsProviders: [{source: KubernetesMetrics}]` to the policy (metrics-server must run in the cluster)",
                ),
                UsageNeed::Query { .. } => (
                    UsageSource::Prometheus,
                    "add `metricsProviders: [{source: Prometheus, prometheus: {url: ...}}]` to the policy",
                ),
            };
            if !self.providers.iter().any(|p| p.source == source) {
                return Err(PolicyError::new(
                    self.file,
                    format!("{}.metricsUtilization", self.args_path(ci)),
                    format!(
                        "{name} reads usage from {}, which the policy does not configure; {what}",
                        source.policy_name()
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn limit(v: Option<i64>) -> Option<u32> {
    v.map(|v| v.clamp(0, u32::MAX as i64) as u32)
}

impl Pipeline {
    /// Builds every plugin of every profile from the `registry`; an invalid plugin arg is a
    /// [`PolicyError`] with the path of the field, such as
    /// `profiles[0].pluginConfig[1].args.thresholds.cpu`.
    pub fn build(
        policy: &Policy,
        file: &str,
        registry: &Registry,
    ) -> Result<Pipeline, PolicyError> {
        let node_selector = policy.node_selector();
        let mut providers = policy.metrics_providers.clone();
        if policy.metrics_collector.as_ref().is_some_and(|c| c.enabled)
            && !providers
                .iter()
                .any(|p| p.source == UsageSource::MetricsServer)
        {
            providers.push(MetricsProvider {
                source: UsageSource::MetricsServer,
                prometheus: None,
                max_sample_age: None,
            });
        }
        let profiles = policy
            .profiles
            .iter()
            .enumerate()
            .map(|(index, profile)| {
                ProfileBuilder {
                    profile,
                    index,
                    file,
                    registry,
                    providers: &providers,
                }
                .build()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let budgets = policy.budgets(file, registry)?;
        Ok(Pipeline {
            profiles,
            budgets,
            limits: Limits {
                per_node: limit(policy.max_no_of_pods_to_evict_per_node),
                per_namespace: limit(policy.max_no_of_pods_to_evict_per_namespace),
                total: limit(policy.max_no_of_pods_to_evict_total),
            },
            node_selector,
            metrics_providers: providers,
            predict_destinations: false,
            scheduler_profile: None,
            termination: crate::sim::Termination {
                graceful: true,
                grace_override: policy.grace_period_seconds,
            },
        })
    }

    /// Whether the planning state must simulate placements: asked for, or an evictor's
    /// `nodeFit` / `placementCheck` or a plugin (MakeRoomForPendingPods) relies on them, or an
    /// evictor checks the destinations of a plugin that sets placement targets
    /// (LowNodeUtilization on requests, with `placementCheck` unset) or that relocates pods
    /// (RemoveDuplicates, the topology spread plugin).
    pub(crate) fn needs_placement(&self) -> bool {
        self.predict_destinations
            || self.profiles.iter().any(|p| {
                let mut plugins = p.deschedule.iter().chain(&p.balance);
                p.evictor.needs_placement()
                    || plugins.any(|pl| {
                        pl.needs_placement()
                            || ((pl.sets_placement_targets() || pl.relocates())
                                && p.evictor.checks_destinations())
                    })
            })
    }

    /// Whether a profile moves pods by surge (DefaultEvictor's `moveMode`): then the cluster's
    /// Deployments, HorizontalPodAutoscalers and ResourceQuotas are read, and surges left in
    /// flight by an earlier run are completed or rolled back.
    pub fn surges(&self) -> bool {
        self.profiles
            .iter()
            .any(|p| p.evictor.move_mode() != super::MoveMode::Evict)
    }

    /// Everything the plugins need measured this cycle, without repeats.
    pub fn usage_needs(&self) -> Vec<UsageNeed> {
        let mut needs: Vec<UsageNeed> = self
            .profiles
            .iter()
            .flat_map(|p| p.deschedule.iter().chain(p.balance.iter()))
            .flat_map(|pl| pl.usage_needs())
            .collect();
        // metrics-server once, with pods if any plugin wants them.
        let wants_pods = needs
            .iter()
            .any(|n| matches!(n, UsageNeed::MetricsServer { pods: true }));
        for n in &mut needs {
            if let UsageNeed::MetricsServer { pods } = n {
                *pods = wants_pods;
            }
        }
        needs.sort();
        needs.dedup();
        needs
    }

    /// The configured provider of a source.
    pub fn provider(&self, source: UsageSource) -> Option<&MetricsProvider> {
        self.metrics_providers.iter().find(|p| p.source == source)
    }

    /// Loads a policy file and builds its pipeline: the one call a runner needs.
    pub fn load(path: &std::path::Path, registry: &Registry) -> Result<Pipeline, PolicyError> {
        let policy = Policy::load(path, registry)?;
        Pipeline::build(&policy, &path.display().to_string(), registry)
    }
}
