//! Prometheus metrics with upstream's names and labels, registered into a registry that is
//! passed in (never globals).
//!
//! - `descheduler_pods_evicted_total{result,strategy,profile,namespace,node}`; `result` is
//!   `success`, `blocked_by_disruption_budget`, `pod_gone` or `error`.
//! - `descheduler_loop_duration_seconds`: one planning-and-eviction cycle.
//! - `descheduler_strategy_duration_seconds{strategy,profile}`: one plugin's planning.
//! - `descheduler_build_info{version}`: always 1.
//! - Beyond upstream: `descheduler_usage_source_errors_total{source}` (a metrics source that
//!   was down, slow or answered garbage) and `descheduler_strategy_skipped_total{strategy,profile}`
//!   (a plugin that skipped a cycle, for example because its metrics source failed), and
//!   `descheduler_predictions_total{result,strategy,profile}` with `--await-placement`: each
//!   awaited replacement by where it landed against the prediction (`exact`, `alternative`,
//!   `missed`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EvictionLabels {
    pub result: String,
    pub strategy: String,
    pub profile: String,
    pub namespace: String,
    pub node: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StrategyLabels {
    pub strategy: String,
    pub profile: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PredictionLabels {
    pub result: String,
    pub strategy: String,
    pub profile: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SourceLabels {
    pub source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    pub version: String,
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 20))
}

#[derive(Clone)]
pub struct Metrics {
    pub pods_evicted: Family<EvictionLabels, Counter>,
    pub loop_duration: Histogram,
    pub strategy_duration: Family<StrategyLabels, Histogram>,
    pub build_info: Family<BuildLabels, Gauge>,
    pub usage_source_errors: Family<SourceLabels, Counter>,
    pub strategy_skipped: Family<StrategyLabels, Counter>,
    pub predictions: Family<PredictionLabels, Counter>,
    /// Workloads left alone now after failed moves (continuous mode's cooldown and back-off).
    pub workloads_backed_off: Gauge,
}

impl Metrics {
    /// Creates the metrics and registers them under the `descheduler` prefix.
    pub fn register(registry: &mut Registry) -> Metrics {
        let m = Metrics {
            pods_evicted: Family::default(),
            loop_duration: duration_histogram(),
            strategy_duration: Family::new_with_constructor(duration_histogram),
            build_info: Family::default(),
            usage_source_errors: Family::default(),
            strategy_skipped: Family::default(),
            predictions: Family::default(),
            workloads_backed_off: Gauge::default(),
        };
        let sub = registry.sub_registry_with_prefix("descheduler");
        sub.register(
            "pods_evicted",
            "Number of evicted pods, by the result of the eviction, the strategy, the profile, the namespace and the node",
            m.pods_evicted.clone(),
        );
        sub.register(
            "loop_duration_seconds",
            "Time taken by one descheduling cycle",
            m.loop_duration.clone(),
        );
        sub.register(
            "strategy_duration_seconds",
            "Time taken by one strategy plugin to plan",
            m.strategy_duration.clone(),
        );
        sub.register(
            "build_info",
            "Build information; always 1",
            m.build_info.clone(),
        );
        sub.register(
            "usage_source_errors",
            "Metrics source failures (down, slow or garbage answers), by source",
            m.usage_source_errors.clone(),
        );
        sub.register(
            "strategy_skipped",
            "Cycles a strategy plugin skipped, for example because its metrics source failed",
            m.strategy_skipped.clone(),
        );
        sub.register(
            "predictions",
            "Awaited replacements (--await-placement) by where they landed against the prediction: exact, alternative or missed",
            m.predictions.clone(),
        );
        sub.register(
            "workloads_backed_off",
            "Workloads left alone after failed moves (a replacement that landed back, stayed Pending, or an eviction the API refused), each for the eviction cooldown doubled per failure in a row",
            m.workloads_backed_off.clone(),
        );
        m.build_info
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_string(),
            })
            .set(1);
        m
    }

    pub fn usage_source_error(&self, source: &str) {
        self.usage_source_errors
            .get_or_create(&SourceLabels {
                source: source.to_string(),
            })
            .inc();
    }

    pub fn strategy_skipped(&self, strategy: &str, profile: &str) {
        self.strategy_skipped
            .get_or_create(&StrategyLabels {
                strategy: strategy.to_string(),
                profile: profile.to_string(),
            })
            .inc();
    }

    /// An awaited replacement landed: `exact`, `alternative` or `missed`.
    pub fn prediction(&self, result: &str, strategy: &str, profile: &str) {
        self.predictions
            .get_or_create(&PredictionLabels {
                result: result.to_string(),
                strategy: strategy.to_string(),
                profile: profile.to_string(),
            })
            .inc();
    }

    pub fn eviction(
        &self,
        result: &str,
        strategy: &str,
        profile: &str,
        namespace: &str,
        node: &str,
    ) {
        self.pods_evicted
            .get_or_create(&EvictionLabels {
                result: result.to_string(),
                strategy: strategy.to_string(),
                profile: profile.to_string(),
                namespace: namespace.to_string(),
                node: node.to_string(),
            })
            .inc();
    }
}

/// The text exposition of a registry.
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).expect("writing to a String");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_match_upstream() {
        let mut r = Registry::default();
        let m = Metrics::register(&mut r);
        m.eviction(
            "success",
            "LowNodeUtilization",
            "default",
            "shop",
            "node-a1",
        );
        m.loop_duration.observe(0.5);
        m.strategy_duration
            .get_or_create(&StrategyLabels {
                strategy: "RemoveDuplicates".into(),
                profile: "default".into(),
            })
            .observe(0.01);
        let text = encode(&r);
        assert!(text.contains(
            "descheduler_pods_evicted_total{result=\"success\",strategy=\"LowNodeUtilization\",profile=\"default\",namespace=\"shop\",node=\"node-a1\"} 1"
        ), "{text}");
        assert!(
            text.contains("descheduler_loop_duration_seconds_count 1"),
            "{text}"
        );
        assert!(text.contains("descheduler_strategy_duration_seconds_count{strategy=\"RemoveDuplicates\",profile=\"default\"} 1"), "{text}");
        assert!(text.contains("descheduler_build_info{version="), "{text}");
        m.usage_source_error("prometheus");
        m.strategy_skipped("LowNodeUtilization", "default");
        m.prediction("missed", "LowNodeUtilization", "default");
        let text = encode(&r);
        assert!(text.contains("descheduler_predictions_total{result=\"missed\",strategy=\"LowNodeUtilization\",profile=\"default\"} 1"), "{text}");
        assert!(
            text.contains("descheduler_usage_source_errors_total{source=\"prometheus\"} 1"),
            "{text}"
        );
        assert!(text.contains("descheduler_strategy_skipped_total{strategy=\"LowNodeUtilization\",profile=\"default\"} 1"), "{text}");
    }
}
