//! Predictions on seeded states (tests/support/states.rs), bounded for CI: the first three
//! seeds of the range `cargo bench --bench predictions` measures (1, 2 and 3: the families
//! sizes, anti-affinity and budgets, with the three policies: RemoveDuplicates +
//! RemovePodsViolatingTopologySpreadConstraint + LowNodeUtilization, LowNodeUtilization on cpu
//! and memory, LowNodeUtilization alone). Chosen as the first seeds, not for passing. Each is
//! built on a real control plane whose kubelet honours grace periods, planned with
//! `--dry-run`, then carried out, and what must always hold is asserted; the figures over
//! many seeds are in benches/predictions.md.

mod support;

use std::time::Instant;
use support::states::{measure, State};
use support::*;

const SEEDS: [u64; 3] = [1, 2, 3];

#[tokio::test]
async fn seeded_states_dry_run_equals_real_and_replacements_land_as_predicted() {
    let cluster = shared_realistic();
    let client = cluster.client();
    let mut families = std::collections::BTreeSet::new();
    // One seed after the other: the states would disturb each other's scheduling otherwise.
    for seed in SEEDS {
        let started = Instant::now();
        let state = State::build(&client, seed).await;
        families.insert(state.family.clone());
        let o = measure(cluster, &state).await;
        eprintln!(
            "seed {seed} {} ({}; {} nodes, {} pods; {}): planned {}, evicted {}, exact {}/{}, \
             within {}/{}, after-state error mean {:.2} max {:.2}, own-node {}, {:.0?}; misses {:?}",
            state.family,
            state.policy,
            state.nodes.len(),
            state.pods(),
            state.summary,
            o.planned,
            o.evicted,
            o.exact,
            o.total,
            o.within,
            o.total,
            o.mean_error,
            o.max_error,
            o.own_node,
            started.elapsed(),
            o.misses
        );
        let context = format!(
            "seed {seed} ({}, {}): {}\nbefore {}\nafter {}",
            state.family,
            state.policy,
            state.summary,
            describe_pods(&o.before),
            describe_pods(&o.after)
        );
        // Every family leaves work to do.
        assert!(o.planned > 0, "nothing planned: {}\n{context}", o.dry);
        // The dry-run names exactly the pods the real run evicts, and all are evicted.
        assert!(
            o.dry_equals_real,
            "dry-run {}\nreal {}\n{context}",
            o.dry, o.real
        );
        assert_eq!(
            o.evicted, o.planned,
            "not all evicted: {}\n{context}",
            o.real
        );
        // No replacement is predicted back on the node it was evicted from, not even as a
        // tie (the evictor refuses such an eviction).
        assert_eq!(o.own_node, 0, "predicted back on its own node: {}", o.real);
        // One replacement per eviction.
        assert_eq!(o.total, o.evicted, "replacements: {context}");
        // Loose bounds that hold from run to run (the targets are 95% within the
        // alternatives and 2 points; these seeds measured 100% exact and 0.00 points, the
        // figures over 24 seeds are in benches/predictions.md).
        assert!(
            o.within * 10 >= o.total * 8,
            "only {}/{} replacements on the predicted node or an alternative: {:?}\n{context}",
            o.within,
            o.total,
            o.misses
        );
        assert!(
            o.mean_error <= 3.0,
            "the predicted after-state is {:.2} points off on average: {:?}\n{context}",
            o.mean_error,
            o.after_differences
        );
    }
    assert_eq!(families.len(), SEEDS.len(), "{families:?}");
    cluster.assert_running();
}
