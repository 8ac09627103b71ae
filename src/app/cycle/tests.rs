//! The cycle's loop, driven by attempters that need no cluster: a dry run and a real run go
//! through the same loop, and the same plan reaches the report in both.

use super::*;
use crate::framework::{PlannedEviction, Thresholds};
use std::path::Path;

/// 2026-12-01T00:00:00Z
const NOW: i64 = 1_796_083_200;

fn example(policy: &str) -> (Pipeline, ClusterSnapshot) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pipeline = Pipeline::load(
        &root.join("policies").join(policy),
        &crate::plugins::REGISTRY,
    )
    .unwrap();
    let snap =
        crate::snapshot::decode::load_file(&root.join("examples/cluster-hotspot.yaml")).unwrap();
    (pipeline, snap)
}

/// Keeps every plan it is handed, then lets `inner` attempt it.
struct Seen<A> {
    inner: A,
    plans: Vec<EvictionPlan>,
}

impl<A: Attempter> Attempter for Seen<A> {
    async fn attempt(
        &mut self,
        snap: &ClusterSnapshot,
        plan: &EvictionPlan,
        memory: &CycleMemory,
    ) -> Attempts {
        self.plans.push(plan.clone());
        self.inner.attempt(snap, plan, memory).await
    }
}

fn seen<A>(inner: A) -> Seen<A> {
    Seen {
        inner,
        plans: Vec::new(),
    }
}

/// An API server that evicts every pod, but refuses the pods in `refuse` (a disruption
/// budget), each once.
struct Api {
    refuse: Vec<PlannedEviction>,
}

impl Attempter for Api {
    async fn attempt(
        &mut self,
        _: &ClusterSnapshot,
        plan: &EvictionPlan,
        _: &CycleMemory,
    ) -> Attempts {
        let mut done = Vec::new();
        for e in &plan.evictions {
            if let Some(i) = self.refuse.iter().position(|r| r.pod == e.pod) {
                self.refuse.remove(i);
                done.push(Attempt::new(e, Outcome::BlockedByDisruptionBudget));
                return Attempts::next(done, Next::Replan);
            }
            done.push(Attempt::new(e, Outcome::Evicted));
        }
        Attempts::next(done, Next::Finish)
    }
}

fn evict_all() -> Api {
    Api { refuse: Vec::new() }
}

/// The JSON report a cycle of `Cycles` writes, read back.
async fn written(
    pipeline: &Pipeline,
    snap: &ClusterSnapshot,
    attempter: &mut impl Attempter,
    dry_run: bool,
) -> Report {
    let mut cycles = Cycles {
        pipeline,
        usage: UsageFetcher::new(pipeline, None, false, None)
            .await
            .unwrap(),
        history: History::default(),
        output: Format::Json,
        metrics: None,
        once: false,
        decision_log: None,
        background: None,
    };
    let mut out = Vec::new();
    let mut snap = snap.clone();
    let end = cycles
        .cycle(&mut snap, NOW, attempter, dry_run, &mut out)
        .await
        .unwrap();
    assert_eq!(end.stopped, None);
    serde_json::from_slice(&out).unwrap()
}

#[tokio::test]
async fn a_dry_run_and_a_real_run_go_through_one_loop_to_one_report() {
    let (pipeline, snap) = example("lownodeutilization.yaml");
    let mut dry = seen(DryRun);
    let dry_report = written(&pipeline, &snap, &mut dry, true).await;
    let mut real = seen(evict_all());
    let mut real_report = written(&pipeline, &snap, &mut real, false).await;

    // One plan each, and the same: what the dry run reported is what the real run attempted.
    assert_eq!((dry.plans.len(), real.plans.len()), (1, 1));
    let (planned, attempted) = (&dry.plans[0], &real.plans[0]);
    assert!(planned.evictions.len() >= 2, "{:?}", planned.evictions);
    assert_eq!(planned.evictions, attempted.evictions);
    assert_eq!(planned.requested_after, attempted.requested_after);

    // The report of each is that plan's: the real one's rows carry each result, and are
    // otherwise the dry run's, after-figures included.
    // (The JSON carries no thresholds: they are drawn on the HTML page only.)
    let built = Report::new(&snap, planned);
    assert!(!built.thresholds.is_empty());
    assert_eq!(
        dry_report,
        Report {
            thresholds: Vec::new(),
            ..built
        }
    );
    assert_eq!(real_report.evictions.len(), planned.evictions.len());
    for row in &mut real_report.evictions {
        assert_eq!(row.result.take().as_deref(), Some("evicted"));
    }
    assert_eq!(real_report, dry_report);

    // The loop hands the report the same plan in both: as planned when nothing was
    // attempted, as carried out (to the same figures) when everything went.
    let history = History::default();
    let dry = run_cycle(&pipeline, &snap, NOW, &history, &mut DryRun, &mut ())
        .await
        .unwrap();
    let real = run_cycle(&pipeline, &snap, NOW, &history, &mut evict_all(), &mut ())
        .await
        .unwrap();
    assert!(dry.attempts.is_empty() && dry.evicted.is_empty());
    assert_eq!(real.evicted.len(), dry.plan.evictions.len());
    assert_eq!(real.plan.evictions, dry.plan.evictions);
    assert_eq!(real.plan.requested_after, dry.plan.requested_after);
    assert_eq!(real.plan.notes, dry.plan.notes);
    // The thresholds the plugin classified with come with the plan, for the HTML page.
    let thresholds = |plan: &EvictionPlan| plan.findings.list::<Thresholds, _>().to_vec();
    assert!(!thresholds(&dry.plan).is_empty());
    assert_eq!(thresholds(&real.plan), thresholds(&dry.plan));
    assert_eq!(real.report(&snap).thresholds, dry.report(&snap).thresholds);
}

#[tokio::test]
async fn a_refused_eviction_is_absorbed_and_the_rest_of_the_cycle_planned_again() {
    let (pipeline, snap) = example("lownodeutilization.yaml");
    let first = crate::plan::plan(&pipeline, &snap, NOW).unwrap();
    let refused = first.evictions[0].clone();
    let mut api = seen(Api {
        refuse: vec![refused.clone()],
    });
    let record = run_cycle(
        &pipeline,
        &snap,
        NOW,
        &History::default(),
        &mut api,
        &mut (),
    )
    .await
    .unwrap();
    // Planned twice: the refusal was absorbed, and the pod is never planned again.
    assert_eq!(api.plans.len(), 2);
    assert!(api.plans[1].evictions.iter().all(|e| e.pod != refused.pod));
    let outcomes = record.outcomes();
    assert_eq!(outcomes[0], Outcome::BlockedByDisruptionBudget);
    assert!(outcomes[1..].iter().all(|o| *o == Outcome::Evicted));
    assert_eq!(record.evicted.len(), outcomes.len() - 1);
    // The report shows the plan as carried out: every attempt in order, with its result.
    let report = record.report(&snap);
    assert_eq!(report.evictions.len(), outcomes.len());
    assert_eq!(report.evictions[0].pod, snap.pod(refused.pod).key());
    assert_eq!(
        report.evictions[0].result.as_deref(),
        Some("blocked_by_disruption_budget")
    );
}
