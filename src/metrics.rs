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
//! - Which rule did what (beyond upstream; `strategy` and `profile` name the plugin and the
//!   profile of the policy that planned, as in `descheduler_pods_evicted_total`):
//!   `descheduler_evictions_planned_total{strategy,profile}` (each eviction a cycle planned;
//!   in a dry run, what a real run would attempt),
//!   `descheduler_eviction_candidates_skipped_total{strategy,profile,reason}` (each candidate
//!   a plugin did not choose, by a small set of reasons: see [`SkipReason::label`]),
//!   `descheduler_evictions_refused_total{strategy,profile,reason}` (each eviction the API or
//!   the re-check refused, by outcome: `blocked_by_disruption_budget`, `pod_gone`, ...), and
//!   `descheduler_cycles_skipped_total{reason}` (`too_few_nodes`: fewer than 2 Ready nodes
//!   match the nodeSelector, as upstream skips; `unchanged`: with `--cycle-on-change`, a
//!   cycle due with no change to the cluster since the last one).
//! - `descheduler_heap_live_bytes`: the bytes the process holds allocated at the scrape,
//!   counted by the binary's allocator ([`count_live_heap_with`]). Resident memory also holds
//!   what the allocator keeps for reuse and moves by more than a slow leak would from one
//!   cycle to the next; the live heap moves only with what the program holds.

use crate::framework::SkipCounts;
#[cfg(doc)]
use crate::framework::SkipReason;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
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
pub struct ReasonLabels {
    pub strategy: String,
    pub profile: String,
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CycleSkipLabels {
    pub reason: String,
}

/// Why a whole cycle was skipped (the `reason` of `descheduler_cycles_skipped_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CycleSkip {
    /// Fewer than 2 Ready nodes match the policy's nodeSelector (upstream's rule).
    TooFewNodes,
    /// `--cycle-on-change`: a cycle was due, and nothing changed since the last one.
    Unchanged,
}

impl CycleSkip {
    pub fn label(self) -> &'static str {
        match self {
            CycleSkip::TooFewNodes => "too_few_nodes",
            CycleSkip::Unchanged => "unchanged",
        }
    }
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
    pub evictions_planned: Family<StrategyLabels, Counter>,
    pub candidates_skipped: Family<ReasonLabels, Counter>,
    pub evictions_refused: Family<ReasonLabels, Counter>,
    pub cycles_skipped: Family<CycleSkipLabels, Counter>,
    /// Workloads left alone now after failed moves (continuous mode's cooldown and back-off).
    pub workloads_backed_off: Gauge,
    /// Surges (make before break) by how they ended, and by namespace.
    pub surges: Family<SurgeLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SurgeLabels {
    pub result: String,
    pub namespace: String,
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
            evictions_planned: Family::default(),
            candidates_skipped: Family::default(),
            evictions_refused: Family::default(),
            cycles_skipped: Family::default(),
            workloads_backed_off: Gauge::default(),
            surges: Family::default(),
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
        sub.register(
            "surges",
            "Moves by surge (DefaultEvictor moveMode), by how they ended (completed, rolled_back, not_started, failed; recovered and recovery_failed for surges an earlier run left in flight) and namespace",
            m.surges.clone(),
        );
        sub.register(
            "evictions_planned",
            "Evictions planned, by the strategy plugin and the profile that planned them",
            m.evictions_planned.clone(),
        );
        sub.register(
            "eviction_candidates_skipped",
            "Candidate pods a strategy plugin did not choose, by plugin, profile and reason (limits, pdb, budget, cooldown, placement, gang, protection, refused, other)",
            m.candidates_skipped.clone(),
        );
        sub.register(
            "evictions_refused",
            "Planned evictions not done, by plugin, profile and outcome (blocked_by_disruption_budget, pod_gone, error, ...)",
            m.evictions_refused.clone(),
        );
        sub.register(
            "cycles_skipped",
            "Descheduling cycles skipped, by reason (too_few_nodes, unchanged)",
            m.cycles_skipped.clone(),
        );
        sub.register_collector(Box::new(LiveHeap));
        // Every reason of a skipped cycle is shown from the start, at 0.
        for reason in [CycleSkip::TooFewNodes, CycleSkip::Unchanged] {
            let _ = m.cycles_skipped.get_or_create(&CycleSkipLabels {
                reason: reason.label().to_string(),
            });
        }
        m.build_info
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_string(),
            })
            .set(1);
        m
    }

    pub fn surge(&self, result: &str, namespace: &str) {
        self.surges
            .get_or_create(&SurgeLabels {
                result: result.to_string(),
                namespace: namespace.to_string(),
            })
            .inc();
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

    /// An eviction planned by `strategy` of `profile`.
    pub fn planned(&self, strategy: &str, profile: &str) {
        self.evictions_planned
            .get_or_create(&StrategyLabels {
                strategy: strategy.to_string(),
                profile: profile.to_string(),
            })
            .inc();
    }

    /// The candidates each plugin did not choose in a cycle, by kind of reason.
    pub fn candidates_skipped(&self, skips: &SkipCounts) {
        for ((profile, strategy, reason), n) in skips {
            self.candidates_skipped
                .get_or_create(&ReasonLabels {
                    strategy: strategy.to_string(),
                    profile: profile.clone(),
                    reason: reason.label().to_string(),
                })
                .inc_by(u64::from(*n));
        }
    }

    /// A planned eviction not done: `reason` is its outcome (`blocked_by_disruption_budget`).
    pub fn refused(&self, strategy: &str, profile: &str, reason: &str) {
        self.evictions_refused
            .get_or_create(&ReasonLabels {
                strategy: strategy.to_string(),
                profile: profile.to_string(),
                reason: reason.to_string(),
            })
            .inc();
    }

    /// A whole cycle skipped.
    pub fn cycle_skipped(&self, why: CycleSkip) {
        self.cycles_skipped
            .get_or_create(&CycleSkipLabels {
                reason: why.label().to_string(),
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
static LIVE_HEAP: std::sync::OnceLock<fn() -> u64> = std::sync::OnceLock::new();

/// Serves `descheduler_heap_live_bytes` from `count`, the global allocator's count of bytes
/// allocated and not freed (the binary's allocator; a process that never calls this has no
/// such metric).
pub fn count_live_heap_with(count: fn() -> u64) {
    let _ = LIVE_HEAP.set(count);
}

/// `descheduler_heap_live_bytes`, read at each scrape.
#[derive(Debug)]
struct LiveHeap;

impl Collector for LiveHeap {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(bytes) = LIVE_HEAP.get().map(|count| count()) {
            let gauge = ConstGauge::new(bytes as i64);
            let m = encoder.encode_descriptor(
                "heap_live_bytes",
                "Bytes the process holds allocated now (allocated and not freed; resident memory also counts what the allocator keeps for reuse)",
                None,
                gauge.metric_type(),
            )?;
            gauge.encode(m)?;
        }
        Ok(())
    }
}

pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).expect("writing to a String");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::SkipReason;

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
        // Only a process whose allocator counts the live heap serves it, read at each scrape.
        assert!(!text.contains("heap_live_bytes"), "{text}");
        static BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(4096);
        count_live_heap_with(|| BYTES.load(std::sync::atomic::Ordering::Relaxed));
        assert!(
            encode(&r).contains("\ndescheduler_heap_live_bytes 4096\n"),
            "{}",
            encode(&r)
        );
        BYTES.store(1 << 30, std::sync::atomic::Ordering::Relaxed);
        assert!(
            encode(&r).contains("\ndescheduler_heap_live_bytes 1073741824\n"),
            "{}",
            encode(&r)
        );
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

    #[test]
    fn planned_skipped_refused_and_cycles_skipped_are_counted_by_rule_and_reason() {
        let mut r = Registry::default();
        let m = Metrics::register(&mut r);
        // Before anything happened, the cycle skip reasons are there at 0.
        let text = encode(&r);
        assert!(
            text.contains("descheduler_cycles_skipped_total{reason=\"too_few_nodes\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("descheduler_cycles_skipped_total{reason=\"unchanged\"} 0"),
            "{text}"
        );
        m.planned("PodLifeTime", "ages");
        m.planned("PodLifeTime", "ages");
        m.planned("LowNodeUtilization", "balance");
        let skips = SkipCounts::from([
            (("ages".to_string(), "PodLifeTime", SkipReason::Limits), 3),
            (("ages".to_string(), "PodLifeTime", SkipReason::Pdb), 1),
            (
                (
                    "balance".to_string(),
                    "LowNodeUtilization",
                    SkipReason::Other,
                ),
                2,
            ),
        ]);
        m.candidates_skipped(&skips);
        m.candidates_skipped(&skips);
        m.refused("PodLifeTime", "ages", "blocked_by_disruption_budget");
        m.cycle_skipped(CycleSkip::TooFewNodes);
        m.cycle_skipped(CycleSkip::Unchanged);
        m.cycle_skipped(CycleSkip::Unchanged);
        let text = encode(&r);
        for line in [
            "descheduler_evictions_planned_total{strategy=\"PodLifeTime\",profile=\"ages\"} 2",
            "descheduler_evictions_planned_total{strategy=\"LowNodeUtilization\",profile=\"balance\"} 1",
            "descheduler_eviction_candidates_skipped_total{strategy=\"PodLifeTime\",profile=\"ages\",reason=\"limits\"} 6",
            "descheduler_eviction_candidates_skipped_total{strategy=\"PodLifeTime\",profile=\"ages\",reason=\"pdb\"} 2",
            "descheduler_eviction_candidates_skipped_total{strategy=\"LowNodeUtilization\",profile=\"balance\",reason=\"other\"} 4",
            "descheduler_evictions_refused_total{strategy=\"PodLifeTime\",profile=\"ages\",reason=\"blocked_by_disruption_budget\"} 1",
            "descheduler_cycles_skipped_total{reason=\"too_few_nodes\"} 1",
            "descheduler_cycles_skipped_total{reason=\"unchanged\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        // The reason labels are a small fixed set.
        let labels: Vec<&str> = SkipReason::ALL.iter().map(|r| r.label()).collect();
        assert_eq!(
            labels,
            [
                "limits",
                "pdb",
                "budget",
                "cooldown",
                "placement",
                "gang",
                "protection",
                "refused",
                "other"
            ]
        );
    }
}
