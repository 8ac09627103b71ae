//! The policy's `evictionBudgets` (issue 31): budgets of evictions with a scope, a sliding
//! period across cycles and a time window, as Karpenter's NodePool disruption budgets.

use descheduler::framework::{History, NoteKind, Pipeline};
use descheduler::plan::{plan, plan_with, CycleMemory, EvictionPlan};
use descheduler::policy::Policy;
use descheduler::snapshot::builders::{node, pod, T0};
use descheduler::snapshot::{ClusterSnapshot, SnapshotParts};

/// T0 (2026-01-01T00:00:00Z) is a Thursday; this is Monday 2026-01-05T00:00:00Z.
const MONDAY: i64 = T0 + 4 * 86_400;
const HOUR: i64 = 3_600;

/// PodLifeTime evicts every pod older than a minute (profile `ages`) and RemoveFailedPods every
/// failed pod (profile `cleanup`), within `budgets` (the YAML of `evictionBudgets`).
fn pipeline(budgets: &str) -> Pipeline {
    let text = format!(
        "apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
evictionBudgets:
{budgets}
profiles:
- name: ages
  pluginConfig:
  - name: PodLifeTime
    args: {{maxPodLifeTimeSeconds: 60}}
  plugins:
    deschedule:
      enabled: [PodLifeTime]
- name: cleanup
  pluginConfig:
  - name: RemoveFailedPods
    args: {{}}
  plugins:
    deschedule:
      enabled: [RemoveFailedPods]
"
    );
    let policy = Policy::from_yaml("policy.yaml", &text, &descheduler::plugins::REGISTRY)
        .unwrap_or_else(|e| panic!("{e}"));
    Pipeline::build(&policy, "policy.yaml", &descheduler::plugins::REGISTRY).unwrap()
}

/// Ten old pods of `shop` (five labelled tier=web) and four of `batch`, over two nodes.
fn cluster() -> ClusterSnapshot {
    let mut pods = Vec::new();
    for i in 0..10 {
        let b = pod("shop", &format!("web-{i}"))
            .node(if i % 2 == 0 { "n1" } else { "n2" })
            .owner("ReplicaSet", "web")
            .created(T0 - 30 * 86_400);
        pods.push(if i < 5 { b.label("tier", "web") } else { b }.build());
    }
    for i in 0..4 {
        pods.push(
            pod("batch", &format!("job-{i}"))
                .node("n2")
                .owner("ReplicaSet", "jobs")
                .created(T0 - 30 * 86_400)
                .build(),
        );
    }
    ClusterSnapshot::build(SnapshotParts {
        nodes: vec![node("n1").build(), node("n2").build()],
        pods,
        ..Default::default()
    })
}

fn evicted(plan: &EvictionPlan, snap: &ClusterSnapshot) -> Vec<String> {
    plan.evictions
        .iter()
        .map(|e| snap.pod(e.pod).key())
        .collect()
}

/// The reasons the plan gives for the candidates it did not choose.
fn held_back(plan: &EvictionPlan) -> Vec<&str> {
    plan.notes
        .iter()
        .filter(|n| matches!(n.kind, NoteKind::NotChosen(_)))
        .map(|n| n.message.as_str())
        .collect()
}

#[test]
fn a_zero_budget_blocks_during_its_window_and_not_outside_it() {
    // No evictions on weekdays from 09:00 to 17:00 UTC.
    let p = pipeline(
        "- name: business-hours\n  evictions: 0\n  schedule: \"0 9 * * 1-5\"\n  duration: 8h",
    );
    let snap = cluster();
    let during = plan(&p, &snap, MONDAY + 10 * HOUR).unwrap();
    assert!(during.evictions.is_empty(), "{:?}", evicted(&during, &snap));
    let reasons = held_back(&during);
    assert_eq!(reasons.len(), 14, "{reasons:?}");
    assert!(
        reasons.iter().all(|r| r.contains(
            "held back by evictionBudget \"business-hours\" (0 evictions per cycle, from \"0 9 * * 1-5\" for 8h): it allows none now"
        )),
        "{reasons:?}"
    );
    // The window opens at 09:00 and closes at 17:00.
    assert!(plan(&p, &snap, MONDAY + 9 * HOUR)
        .unwrap()
        .evictions
        .is_empty());
    for outside in [
        MONDAY + 9 * HOUR - 1,
        MONDAY + 17 * HOUR,
        MONDAY - 86_400 + 10 * HOUR,
    ] {
        let free = plan(&p, &snap, outside).unwrap();
        assert_eq!(free.evictions.len(), 14, "at {outside}");
    }
}

#[test]
fn the_smallest_applicable_budget_wins_and_scopes_narrow_what_counts() {
    let snap = cluster();
    // Three evictions in all, at most one of `batch`.
    let p = pipeline(
        "- name: all\n  evictions: 3\n- name: batch-one\n  evictions: \"1\"\n  namespaces: [batch]",
    );
    let planned = plan(&p, &snap, MONDAY).unwrap();
    assert_eq!(
        evicted(&planned, &snap),
        vec!["batch/job-0", "shop/web-0", "shop/web-1"]
    );
    let reasons = held_back(&planned);
    assert!(
        reasons.iter().any(
            |r| r.contains("evictionBudget \"batch-one\" (1 eviction per cycle)")
                && r.contains("1 of 1 spent this cycle")
        ),
        "{reasons:?}"
    );
    // A budget on another plugin, profile or label leaves these evictions alone.
    for other in [
        "- name: x\n  evictions: 0\n  plugins: [RemoveFailedPods]",
        "- name: x\n  evictions: 0\n  profiles: [cleanup]",
        "- name: x\n  evictions: 0\n  labelSelector: {matchLabels: {tier: db}}",
    ] {
        assert_eq!(
            plan(&pipeline(other), &snap, MONDAY)
                .unwrap()
                .evictions
                .len(),
            14,
            "{other}"
        );
    }
    // A label selector: only the five tier=web pods count, and none may go.
    let web = pipeline("- name: web\n  evictions: 0\n  labelSelector: {matchLabels: {tier: web}}");
    let planned = plan(&web, &snap, MONDAY).unwrap();
    assert_eq!(planned.evictions.len(), 9);
    assert!(planned
        .evictions
        .iter()
        .all(|e| snap.pod(e.pod).labels.get("tier").is_none()));
}

#[test]
fn a_percentage_of_the_pods_in_scope_rounds_up() {
    let snap = cluster();
    // 25% of 10 shop pods: 2.5, rounded up to 3.
    let p = pipeline("- name: shop\n  evictions: \"25%\"\n  namespaces: [shop]");
    let planned = plan(&p, &snap, MONDAY).unwrap();
    let shop = planned
        .evictions
        .iter()
        .filter(|e| &*snap.pod(e.pod).namespace == "shop")
        .count();
    assert_eq!((shop, planned.evictions.len()), (3, 7));
    assert!(held_back(&planned)
        .iter()
        .any(|r| r.contains("(25% of the pods in scope: 3 per cycle)")));
}

#[test]
fn a_budget_with_a_period_counts_earlier_cycles_and_forgets_them_after_it() {
    let snap = cluster();
    let p = pipeline("- name: hourly\n  evictions: 4\n  period: 1h");
    // The first cycle spends the whole budget.
    let first = plan(&p, &snap, MONDAY).unwrap();
    assert_eq!(first.evictions.len(), 4);
    assert!(first.evictions.iter().all(|e| e.budgets == ["hourly"]));
    let spent = first.evictions.iter().map(|e| e.budgets.as_slice());
    let history = History::default().record_budget_spends(&p.budgets, spent, MONDAY);
    assert_eq!(history.budget_spent("hourly", HOUR, MONDAY + 60), 4);
    // Ten minutes later nothing is left; the budget says what was spent.
    let memory = CycleMemory::new(history.clone());
    let later = plan_with(&p, &snap, MONDAY + 600, &memory, &mut ()).unwrap();
    assert!(later.evictions.is_empty());
    assert!(held_back(&later)
        .iter()
        .all(|r| r.contains("4 of 4 spent within its period")));
    // An hour after the evictions, the budget is whole again.
    let memory = CycleMemory::new(history.clone());
    let next_hour = plan_with(&p, &snap, MONDAY + HOUR, &memory, &mut ()).unwrap();
    assert_eq!(next_hour.evictions.len(), 4);
    // Recording forgets what no period covers any longer.
    let forgotten = history.record_budget_spends(&p.budgets, [], MONDAY + HOUR);
    assert!(forgotten.budget_spent.is_empty());
}

#[test]
fn evictions_earlier_in_the_cycle_count_against_the_budget_when_planning_again() {
    let snap = cluster();
    let p = pipeline("- name: two\n  evictions: 2");
    let first = plan(&p, &snap, MONDAY).unwrap();
    assert_eq!(first.evictions.len(), 2);
    // The first went; the second was refused: planning again finds no budget left for a
    // third, since the first counts.
    let mut memory = CycleMemory::default();
    let e = &first.evictions[0];
    memory.evicted.push(e.pod);
    memory.evicted_by.push((e.pod, e.profile.clone(), e.plugin));
    memory.refused.push(first.evictions[1].pod);
    let again = plan_with(&p, &snap, MONDAY, &memory, &mut ()).unwrap();
    assert_eq!(again.evictions.len(), 1, "{:?}", evicted(&again, &snap));
    assert_ne!(again.evictions[0].pod, first.evictions[1].pod);
}

/// Each wrong field is refused with the file, its path and what to write instead.
#[test]
fn every_budget_field_is_validated_with_its_path_and_a_fix() {
    let cases: &[(&str, &str, &str)] = &[
        ("- evictions: 1", "evictionBudgets[0].name", "missing"),
        (
            "- name: a\n  evictions: 1\n- name: a\n  evictions: 2",
            "evictionBudgets[1].name",
            "duplicate budget name \"a\"",
        ),
        ("- name: a", "evictionBudgets[0].evictions", "missing"),
        (
            "- name: a\n  evictions: -1",
            "evictionBudgets[0].evictions",
            "-1 is out of range",
        ),
        (
            "- name: a\n  evictions: \"120%\"",
            "evictionBudgets[0].evictions",
            "over 100%",
        ),
        (
            "- name: a\n  evictions: lots",
            "evictionBudgets[0].evictions",
            "neither a count nor a percentage",
        ),
        (
            "- name: a\n  evictions: 1.5",
            "evictionBudgets[0].evictions",
            "not a whole number",
        ),
        (
            "- name: a\n  evictions: 1\n  schedule: \"0 0 9 * * 1-5\"\n  duration: 1h",
            "evictionBudgets[0].schedule",
            "has 6 fields",
        ),
        (
            "- name: a\n  evictions: 1\n  schedule: \"0 25 * * *\"\n  duration: 1h",
            "evictionBudgets[0].schedule",
            "not a cron schedule",
        ),
        (
            "- name: a\n  evictions: 1\n  schedule: \"0 9 * * *\"",
            "evictionBudgets[0].duration",
            "needs a duration",
        ),
        (
            "- name: a\n  evictions: 1\n  duration: 1h",
            "evictionBudgets[0].schedule",
            "a duration needs a schedule",
        ),
        (
            "- name: a\n  evictions: 1\n  schedule: \"@daily\"\n  duration: 0s",
            "evictionBudgets[0].duration",
            "shorter than a second",
        ),
        (
            "- name: a\n  evictions: 1\n  period: an hour",
            "evictionBudgets[0].period",
            "not a duration",
        ),
        (
            "- name: a\n  evictions: 1\n  profiles: [nightly]",
            "evictionBudgets[0].profiles[0]",
            "no profile is named \"nightly\"; the profiles are ages, cleanup",
        ),
        (
            "- name: a\n  evictions: 1\n  plugins: [LowNodeUtilisation]",
            "evictionBudgets[0].plugins[0]",
            "unknown plugin \"LowNodeUtilisation\"",
        ),
        (
            "- name: a\n  evictions: 1\n  namespaces: [\"\"]",
            "evictionBudgets[0].namespaces[0]",
            "empty",
        ),
        (
            "- name: a\n  evictions: 1\n  labelSelector: {matchExpressions: [{key: tier, operator: Has}]}",
            "evictionBudgets[0].labelSelector",
            "operator \"Has\"",
        ),
        (
            "- name: a\n  evictions: 1\n  nodes: 2",
            "evictionBudgets[0]",
            "unknown field `nodes`",
        ),
    ];
    for (budgets, path, message) in cases {
        let text = format!(
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nevictionBudgets:\n{budgets}\nprofiles:\n- name: ages\n  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n- name: cleanup\n  plugins:\n    deschedule:\n      enabled: [RemoveFailedPods]\n"
        );
        let e = Policy::from_yaml("policy.yaml", &text, &descheduler::plugins::REGISTRY)
            .expect_err(budgets);
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("policy policy.yaml: {path}")) && shown.contains(message),
            "{budgets}\n=> {shown}"
        );
    }
}

/// The shipped example, offline, as a user runs it: `--now` inside the business-hours window
/// plans nothing and names the budget; after it, the hourly budget of the shop lets 10% go.
#[test]
fn the_shipped_example_blocks_during_business_hours_and_names_the_budget() {
    let run = |now: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_descheduler"))
            .args([
                "--policy-config-file",
                "policies/eviction-budgets.yaml",
                "--snapshot",
                "examples/cluster-hotspot.yaml",
                "--now",
                now,
                "-o",
                "json",
            ])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let why_not = |v: &serde_json::Value| -> Vec<String> {
        v["notChosen"]
            .as_array()
            .unwrap_or_else(|| panic!("no notChosen in {v}"))
            .iter()
            .map(|c| c["reason"].as_str().unwrap().to_string())
            .collect()
    };
    // Tuesday 2026-12-01, 10:00 UTC: inside the window.
    let during = run("2026-12-01T10:00:00Z");
    assert_eq!(during["evictions"].as_array().unwrap().len(), 0, "{during}");
    let reasons = why_not(&during);
    assert!(!reasons.is_empty());
    assert!(
        reasons
            .iter()
            .all(|r| r.contains("evictionBudget \"business-hours\"")
                && r.contains("allows none now")),
        "{reasons:?}"
    );
    // 18:00 UTC: the window has closed; 10% of the shop's pods, rounded up, may go.
    let after = run("2026-12-01T18:00:00Z");
    assert_eq!(after["evictions"].as_array().unwrap().len(), 2, "{after}");
    assert!(why_not(&after)
        .iter()
        .all(|r| r.contains("evictionBudget \"shop-hourly\"")));
}
