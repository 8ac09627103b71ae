//! Scale benchmarks on synthetic clusters (`descheduler::snapshot::synthetic`), with the
//! three balancing strategies of `benches/scale-policy.yaml` enabled.
//!
//! - `decode`: snapshot bytes (a `kind: List` JSON) to an indexed `ClusterSnapshot`;
//! - `plan`: the planner alone, on a decoded snapshot;
//! - `end_to_end`: read the file, decode, plan and render the JSON report, as
//!   `descheduler --snapshot FILE -o json` does (the report written straight from the plan).
//!
//! - `plan_outcome`: the planner alone with `benches/outcome-scale-policy.yaml` (OutcomeBalance
//!   planning the same thresholds, spreads and duplicates together; bounded by its
//!   `maxEvaluations`).
//!
//! Each runs on a small cluster (500 nodes, 15,000 pods) and on the large one the scale goal
//! names (5,000 nodes, 150,000 pods). `cargo bench --bench planner -- small` runs only the
//! small one; `cargo bench --bench planner -- large/` only the large one.

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, Criterion, SamplingMode, Throughput,
};
use descheduler::framework::Pipeline;
use descheduler::plan::{self, EvictionPlan};
use descheduler::report::{Format, Input};
use descheduler::snapshot::synthetic::{self, Config};
use descheduler::snapshot::{decode, ClusterSnapshot};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

// The binary's allocator, so that `end_to_end` measures what `descheduler` does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// 2026-12-01T00:00:00Z, the planning time of every run.
const NOW: i64 = 1_796_083_200;

const SIZES: [(&str, usize, usize); 2] = [("small", 500, 15_000), ("large", 5_000, 150_000)];

fn load_policy(policy: &str) -> Pipeline {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(policy);
    Pipeline::load(&path, &descheduler::plugins::REGISTRY)
        .unwrap_or_else(|e| panic!("{policy} is a valid policy: {e}"))
}

fn end_to_end(path: &Path, pipeline: &Pipeline) -> String {
    let snap = decode::load_file(path).expect("the synthetic cluster decodes");
    let plan = plan::plan(pipeline, &snap, NOW).expect("planning succeeds");
    let mut out = Vec::with_capacity(1 << 20);
    descheduler::report::write(Input::plan(&snap, &plan), Format::Json, &mut out)
        .expect("the report is written");
    String::from_utf8(out).expect("the report is UTF-8")
}

/// What the plan holds, printed once per size so the benchmark shows it does real work.
fn describe(name: &str, bytes: usize, snap: &ClusterSnapshot, plan: &EvictionPlan) {
    let mut by_plugin: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &plan.evictions {
        *by_plugin.entry(e.plugin).or_default() += 1;
    }
    eprintln!(
        "{name}: {:.1} MB, {} nodes, {} pods, {} PDBs; {} evictions planned {by_plugin:?}",
        bytes as f64 / 1e6,
        snap.nodes.len(),
        snap.pods.len(),
        snap.pdbs.len(),
        plan.evictions.len(),
    );
}

fn configure(group: &mut BenchmarkGroup<'_, WallTime>, large: bool) {
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    if large {
        // Runs of a second or more: the same few iterations in every sample.
        group.sampling_mode(SamplingMode::Flat);
        group.measurement_time(Duration::from_secs(20));
    } else {
        group.measurement_time(Duration::from_secs(8));
    }
}

fn benches(c: &mut Criterion) {
    let pipeline = load_policy("benches/scale-policy.yaml");
    let outcome = load_policy("benches/outcome-scale-policy.yaml");
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, nodes, pods) in SIZES {
        let large = name == "large";
        let id = format!("{name}/{nodes}n-{pods}p");
        // Generating the large cluster takes a few seconds; skip it when filtered out.
        let filters: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        let wanted = filters.is_empty()
            || filters.iter().any(|f| {
                ["decode", "plan", "plan_outcome", "end_to_end"]
                    .iter()
                    .any(|g| format!("{g}/{id}").contains(f.as_str()))
            });
        if !wanted {
            continue;
        }
        let started = Instant::now();
        let bytes = synthetic::generate_json(&Config::new(nodes, pods, 1));
        let path = dir.path().join(format!("{name}.json"));
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&bytes))
            .expect("writing the snapshot file");
        let snap = decode::load_bytes("synthetic.json", &bytes).expect("the cluster decodes");
        let plan = plan::plan(&pipeline, &snap, NOW).expect("planning succeeds");
        describe(&id, bytes.len(), &snap, &plan);
        drop(plan);
        let plan = plan::plan(&outcome, &snap, NOW).expect("planning succeeds");
        describe(&format!("{id} (OutcomeBalance)"), bytes.len(), &snap, &plan);
        // Its summary: the distance before and after, and whether maxEvaluations stopped it.
        for note in plan.notes.iter().filter(|n| {
            n.plugin == "OutcomeBalance"
                && (n.message.contains("placements simulated")
                    || n.message.contains("maxEvaluations"))
        }) {
            eprintln!("  {}", note.message);
        }
        drop(plan);
        eprintln!("{id}: set up in {:.1?}", started.elapsed());

        let mut group = c.benchmark_group("decode");
        configure(&mut group, large);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(&id, |b| {
            b.iter_with_large_drop(|| {
                decode::load_bytes("synthetic.json", black_box(&bytes)).expect("decodes")
            })
        });
        group.finish();

        for (group_name, policy) in [("plan", &pipeline), ("plan_outcome", &outcome)] {
            let mut group = c.benchmark_group(group_name);
            configure(&mut group, large);
            group.bench_function(&id, |b| {
                b.iter_with_large_drop(|| {
                    plan::plan(policy, black_box(&snap), NOW).expect("planning succeeds")
                })
            });
            group.finish();
        }
        drop(snap);
        drop(bytes);

        let mut group = c.benchmark_group("end_to_end");
        configure(&mut group, large);
        group.bench_function(&id, |b| {
            b.iter(|| end_to_end(black_box(&path), &pipeline).len())
        });
        group.finish();
    }
}

criterion_group!(planner, benches);
criterion_main!(planner);
