use super::*;
use crate::plan::{self, AfterState, Landing};
use crate::snapshot::builders::{node, pod};
use crate::snapshot::{ClusterSnapshot, SnapshotParts};

/// The plan records each node's target; a replacement that lands elsewhere than predicted
/// and puts its node over it is reported, one that stays within it is not.
#[test]
fn a_landing_miss_that_puts_a_node_over_its_target_is_reported() {
    let pipeline = crate::plugins::testing::pipeline(
        r#"
profiles:
- name: one
  pluginConfig:
  - name: LowNodeUtilization
    args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}
  plugins: {balance: {enabled: [LowNodeUtilization]}}
"#,
    );
    // hot: 5 x 600m of 4 cpu (75%); cold-a and cold-b empty.
    let snap = ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("cold-a").cpu(4000).build(),
            node("cold-b").cpu(4000).build(),
            node("hot").cpu(4000).build(),
        ],
        pods: (0..5)
            .map(|i| pod("web", &format!("w{i}")).node("hot").cpu(600).build())
            .collect(),
        ..Default::default()
    });
    let mut plan = plan::plan(&pipeline, &snap, 0).unwrap();
    assert_eq!(plan.evictions.len(), 2, "{:?}", plan.evictions);
    let hot = snap.node_id("hot").unwrap();
    let cold_a = snap.node_id("cold-a").unwrap();
    let targets = plan.findings.list::<PlacementTarget, _>();
    assert_eq!(targets.len(), 3);
    assert!(targets
        .iter()
        .all(|(p, t)| *p == NAME && t.limit["cpu"] == 2000));
    // Where predicted: nothing to say.
    let predicted: Vec<(usize, NodeId)> = plan
        .evictions
        .iter()
        .enumerate()
        .map(|(i, e)| (i, e.destination.unwrap()))
        .collect();
    assert!(plan.landing_misses(&snap, &predicted).is_empty());
    // Both on cold-a (one of them predicted on cold-b): 1200m, within cold-a's target.
    let (evicted, evictions) = (plan.requested_after.evicted.clone(), plan.evictions.clone());
    let first = evictions[0].destination.unwrap();
    let on = |nodes: &[NodeId]| {
        AfterState::new(
            evicted.clone(),
            evictions.iter().zip(nodes).map(|(e, &n)| Landing {
                requests: &snap.pod(e.pod).requests,
                node: n,
                alternatives: &[],
            }),
        )
    };
    plan.requested_after = on(&[cold_a, cold_a]);
    assert!(plan
        .landing_misses(&snap, &[(0, cold_a), (1, cold_a)])
        .is_empty());
    // The second back on hot: 1800m + 600m = 2400m, over hot's 2000m.
    plan.requested_after = on(&[first, hot]);
    let misses = plan.landing_misses(&snap, &[(1, hot)]);
    assert_eq!(misses.len(), 1, "{misses:?}");
    assert_eq!(misses[0].0, 1);
    assert!(
        misses[0]
            .1
            .ends_with("landed on hot, not on the predicted cold-b: the node is over its LowNodeUtilization target now (cpu 2400 > 2000)")
            || misses[0]
                .1
                .ends_with("landed on hot, not on the predicted cold-a: the node is over its LowNodeUtilization target now (cpu 2400 > 2000)"),
        "{misses:?}"
    );
}
