//! Scarce budgets spent where they fix most (issue 29): when the disruption budgets allow
//! fewer evictions than the profiles want, the plugins repairing hard constraints go first.

use descheduler::framework::{NoteKind, Pipeline, PlanNote};
use descheduler::plan::{plan, EvictionPlan};
use descheduler::snapshot::ClusterSnapshot;

use descheduler::policy::Policy;
use descheduler::snapshot::builders::{node, pdb, pod, T0};
use descheduler::snapshot::{SnapshotParts, WhenUnsatisfiable};

const ZONE: &str = "topology.kubernetes.io/zone";

fn pipeline(balance: &str) -> Pipeline {
    let config: String = balance
        .split(", ")
        .map(|name| format!("  - name: {name}\n    args: {{}}\n"))
        .collect();
    let text = format!(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n{config}  plugins:\n    balance:\n      enabled: [{balance}]\n"
    );
    let policy = Policy::from_yaml("policy.yaml", &text, &descheduler::plugins::REGISTRY).unwrap();
    Pipeline::build(&policy, "policy.yaml", &descheduler::plugins::REGISTRY).unwrap()
}

/// Zone z1 holds four web pods (three on a1), z2 one, z3 none: a DoNotSchedule zone
/// spread of maxSkew 1 is violated, and a1 holds duplicates. The budget lets one go.
fn drifted(allowed: i32) -> ClusterSnapshot {
    let web = |name: &str, n: &str| {
        pod("shop", name)
            .node(n)
            .cpu(100)
            .owner("ReplicaSet", "web")
            .label("app", "web")
            .image("web:1")
            .spread(1, ZONE, WhenUnsatisfiable::DoNotSchedule, "app", "web")
            .build()
    };
    ClusterSnapshot::build(SnapshotParts {
        nodes: vec![
            node("a1").label(ZONE, "z1").build(),
            node("a2").label(ZONE, "z1").build(),
            node("b1").label(ZONE, "z2").build(),
            node("c1").label(ZONE, "z3").build(),
        ],
        pods: vec![
            web("web-1", "a1"),
            web("web-2", "a1"),
            web("web-3", "a1"),
            web("web-4", "a2"),
            web("web-5", "b1"),
        ],
        pdbs: vec![pdb("shop", "web", "app", "web", allowed)],
        ..Default::default()
    })
}

fn plugins_of(plan: &EvictionPlan) -> Vec<&'static str> {
    plan.evictions.iter().map(|e| e.plugin).collect()
}

#[test]
fn a_scarce_budget_goes_first_to_the_hard_constraint_repair() {
    let both = pipeline("RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint");
    let snap = drifted(1);
    let planned = plan(&both, &snap, T0).unwrap();
    assert_eq!(
        plugins_of(&planned),
        vec!["RemovePodsViolatingTopologySpreadConstraint"],
        "{:?}",
        planned.notes
    );
    // The move that waited is said, on the plugin whose move it was.
    let waited: Vec<&PlanNote> = planned
        .notes
        .iter()
        .filter(|n| n.plugin == "RemoveDuplicates" && n.kind == NoteKind::Info)
        .collect();
    assert_eq!(waited.len(), 1, "{:?}", planned.notes);
    assert!(
        waited[0].message.starts_with("2 of its evictions waited")
            && waited[0]
                .message
                .contains("(RemovePodsViolatingTopologySpreadConstraint)"),
        "{}",
        waited[0].message
    );
    // Alone, RemoveDuplicates spends the budget as before.
    let dups = plan(&pipeline("RemoveDuplicates"), &snap, T0).unwrap();
    assert_eq!(plugins_of(&dups), vec!["RemoveDuplicates"]);
}

#[test]
fn with_budget_enough_the_order_is_upstreams() {
    let both = pipeline("RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint");
    let planned = plan(&both, &drifted(10), T0).unwrap();
    let plugins = plugins_of(&planned);
    assert_eq!(plugins.first(), Some(&"RemoveDuplicates"), "{plugins:?}");
    assert!(plugins.contains(&"RemovePodsViolatingTopologySpreadConstraint"));
    assert!(
        !planned.notes.iter().any(|n| n.message.contains("waited")),
        "{:?}",
        planned.notes
    );
}
