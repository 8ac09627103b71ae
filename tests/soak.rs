//! The differential soak: continuous mode's watch-fed model equals the cluster under churn.
//!
//! A seeded generator ([`support::churn`]) loads a cluster (kube-apiserver only: it writes
//! what the controllers and kubelet would) and churns it: pods created, deleted, relabelled,
//! going Pending, Running and Failed, ReplicaSets scaled, nodes added, removed, tainted,
//! cordoned, going NotReady and back, disruption budgets created, changed and deleted, in
//! bursts and quiet spells. The descheduler runs in continuous mode (dry run, a cycle a
//! second, its decision log keeping each cycle's snapshot) the whole time. At each checkpoint
//! the churn stops, and a cycle that started after the last change must plan exactly what a
//! one-shot run listing the cluster fresh plans (same `--now`), from the same objects, and what
//! the offline planner plans from its kept snapshot ([`support::soak`]).
//!
//! Bounded by default (10 nodes, 300 pods, about a minute); `benches/soak/run` runs it
//! long and large through the same variables:
//!
//! | env | default | meaning |
//! | --- | --- | --- |
//! | `SOAK_SEED` | 34 | the generator's seed (printed; the same seed draws the same changes) |
//! | `SOAK_NODES`, `SOAK_PODS` | 10, 300 | the cluster loaded before the churn |
//! | `SOAK_SECONDS` | 40 | seconds of churn in all, split between the checkpoints |
//! | `SOAK_CHECKPOINTS` | 4 | checkpoints after churn (one more on the loaded cluster) |
//! | `SOAK_RATE` | 30 | changes a second between bursts |
//! | `SOAK_BURST`, `SOAK_BURST_PERCENT` | 150, 5 | changes in a burst, and the chance a second of one |
//! | `SOAK_INTERVAL` | `1s` | `--descheduling-interval` |
//! | `SOAK_SETTLE_MS` | 1000 | how long after the last change the compared cycle starts at the earliest |
//! | `SOAK_WORKERS` | 16 | concurrent requests while loading, and changes in flight while churning |
//! | `SOAK_IDLE_CYCLES` | 1 | cycles after each checkpoint with the churn stopped (idle cycles) |
//! | `SOAK_WARMUP` | 20 | cycles before memory growth is measured |
//! | `SOAK_MAX_RSS_GROWTH` | unset | fail when resident memory grew more than this (percent) after warm-up |
//! | `SOAK_MAX_HEAP_GROWTH` | unset | fail when the live heap grew more than this (percent) after warm-up |
//! | `SOAK_SAMPLES` | unset | a CSV file for the per-cycle samples (cycle, resident KiB, live heap KiB, CPU ticks, changes done, idle) |
//! | `SOAK_DIR` | `target/soak/seed-<seed>-<time>` | where checkpoints keep what differed |

mod support;

use chrono::Utc;
use std::time::{Duration, Instant};
use support::churn::{Churn, Model, Pool, KINDS};
use support::soak::{resource_summary, Soak};
use support::*;

/// Every rule that reads what the churn changes: duplicates (owners, nodes), utilization
/// (requests, Ready, cordons), taints, failed pods; budgets and nodeFit in the evictor.
const POLICY: &str = r#"
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: soak
    pluginConfig:
      - name: DefaultEvictor
        args:
          nodeFit: true
      - name: RemoveDuplicates
      - name: RemovePodsViolatingNodeTaints
      - name: RemoveFailedPods
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 20, memory: 20, pods: 20}
          targetThresholds: {cpu: 50, memory: 50, pods: 50}
    plugins:
      deschedule:
        enabled: [RemovePodsViolatingNodeTaints, RemoveFailedPods]
      balance:
        enabled: [RemoveDuplicates, LowNodeUtilization]
"#;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a valid value")),
        _ => default,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watch_fed_model_equals_a_fresh_list_under_churn() {
    let seed: u64 = env("SOAK_SEED", 34);
    let nodes: usize = env("SOAK_NODES", 10);
    let pods: usize = env("SOAK_PODS", 300);
    let seconds: u64 = env("SOAK_SECONDS", 40);
    let checkpoints: u32 = env("SOAK_CHECKPOINTS", 4);
    let rate: f64 = env("SOAK_RATE", 30.0);
    let burst: usize = env("SOAK_BURST", 150);
    let burst_percent: i64 = env("SOAK_BURST_PERCENT", 5);
    let interval: String = env("SOAK_INTERVAL", "1s".to_string());
    let settle = Duration::from_millis(env("SOAK_SETTLE_MS", 1000));
    let workers: usize = env("SOAK_WORKERS", 16);
    let warmup: usize = env("SOAK_WARMUP", 20);
    let idle_cycles: usize = env("SOAK_IDLE_CYCLES", 1);
    let percent = |name: &str| -> Option<f64> {
        std::env::var(name).ok().filter(|v| !v.is_empty()).map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}: a number (percent)"))
        })
    };
    let max_growth = percent("SOAK_MAX_RSS_GROWTH");
    let max_heap_growth = percent("SOAK_MAX_HEAP_GROWTH");
    eprintln!(
        "soak: seed {seed} (SOAK_SEED={seed} replays it); {nodes} nodes, {pods} pods, {seconds} s of churn at {rate}/s, bursts of {burst} ({burst_percent}% a second), {workers} changes in flight at most, {checkpoints} checkpoints, {idle_cycles} idle cycles after each"
    );
    let work = std::env::var_os("SOAK_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/soak")
                .join(format!(
                    "seed-{seed}-{}",
                    Utc::now().format("%Y%m%dT%H%M%S")
                ))
        });
    std::fs::create_dir_all(&work).unwrap();

    let started = Instant::now();
    let cluster = Cluster::start(Components::apiserver_only());
    let client = cluster.client();
    let mut churn = Churn::load(&client, seed, nodes, pods, workers).await;
    eprintln!(
        "soak: control plane started and {} nodes / {} pods loaded in {:.1?}",
        churn.nodes(),
        churn.pods(),
        started.elapsed()
    );
    let policy = write_policy(&work, POLICY);
    let kubeconfig = cluster.kubeconfig().to_str().unwrap().to_string();
    let mut soak = Soak::start(
        &policy,
        &kubeconfig,
        &work,
        &interval,
        seed,
        churn.activity(),
    );

    let check = |soak_result: Result<support::soak::Checkpoint, String>, what: &str| {
        let c = soak_result.unwrap_or_else(|e| panic!("{e}"));
        assert!(
            c.pods > 0 && c.nodes > 0,
            "{what}: an empty snapshot: {c:?}"
        );
        c
    };
    let c = check(
        soak.checkpoint(Utc::now(), settle).await,
        "the loaded cluster",
    );
    eprintln!(
        "soak: checkpoint 1 (loaded): {} nodes, {} pods, {} evictions planned: identical",
        c.nodes, c.pods, c.evictions
    );
    let phase = Duration::from_secs(seconds) / checkpoints.max(1);
    let mut total_evictions = c.evictions;
    for i in 0..checkpoints {
        let before = churn.total();
        let (t, bursts) = (Instant::now(), churn.bursts.len());
        churn.run(phase, rate, burst, burst_percent).await;
        let applied = churn.total() - before;
        let churned = t.elapsed();
        let burst_rates: Vec<String> = churn.bursts[bursts..]
            .iter()
            .map(|(n, d)| format!("{:.0}/s", *n as f64 / d.as_secs_f64()))
            .collect();
        let quiet = Utc::now();
        let c = check(
            soak.checkpoint(quiet, settle).await,
            &format!("checkpoint {}", i + 2),
        );
        total_evictions += c.evictions;
        eprintln!(
            "soak: checkpoint {} after {applied} changes in {churned:.1?} ({:.0}/s; bursts of {burst}: {}): {} nodes, {} pods, {} evictions planned, compared {:.1?} after the last change: identical",
            i + 2,
            applied as f64 / churned.as_secs_f64(),
            if burst_rates.is_empty() { "none".to_string() } else { burst_rates.join(", ") },
            c.nodes,
            c.pods,
            c.evictions,
            c.waited,
        );
        soak.idle_cycles(idle_cycles).await;
    }
    // The check can fail: a cycle that read the cluster before changes differs from a list
    // made after them, and the difference is kept.
    let before = Utc::now();
    for _ in 0..20 {
        churn.step().await;
    }
    churn.drain().await;
    let (path, record) = soak
        .record_before(before)
        .expect("a cycle recorded before the last changes");
    let stale = soak.compare(&path, &record, "stale").await.expect_err(
        "a cycle that read the cluster before 20 changes must differ from a list after them",
    );
    assert!(
        stale.contains("differ") && work.join("stale/differences.txt").is_file(),
        "{stale}"
    );
    soak.assert_alive("the end");
    let resources = resource_summary(&soak.samples(), warmup);
    if let Some(path) = std::env::var_os("SOAK_SAMPLES").filter(|p| !p.is_empty()) {
        soak.write_samples(std::path::Path::new(&path));
    }
    let stderr = soak.stop().await;
    assert!(!stderr.contains("panicked"), "{stderr}");
    eprintln!("soak: {}", resources.line);
    eprintln!(
        "soak: seed {seed}: {} changes applied in {:.1?} (at most {} in flight; {}), {} checkpoints, {total_evictions} planned evictions compared, 0 differences",
        churn.total(),
        started.elapsed(),
        churn.peak_in_flight(),
        churn
            .applied
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
        checkpoints + 1,
    );
    // The churn did churn: most kinds of change were applied.
    let kinds = KINDS.iter().filter(|k| churn.applied[*k] > 0).count();
    assert!(
        kinds >= KINDS.len() - 3,
        "only {kinds} kinds of change applied: {:?}",
        churn.applied
    );
    if let (Some(max), Some(growth)) = (max_growth, resources.rss_growth) {
        assert!(
            growth <= max,
            "resident memory grew {growth:.1}% after warm-up (at most {max}%): {}",
            resources.line
        );
    }
    if let Some(max) = max_heap_growth {
        let growth = resources
            .heap_growth
            .unwrap_or_else(|| panic!("the live heap was not sampled: {}", resources.line));
        assert!(
            growth <= max,
            "the live heap grew {growth:.1}% after warm-up (at most {max}%): {}",
            resources.line
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// The changes a seed draws from a loaded model, with the model's counts after each.
fn draws(
    seed: u64,
    nodes: usize,
    pods: usize,
    n: usize,
) -> Vec<(support::churn::Change, usize, usize)> {
    let mut model = Model::load(seed, nodes, pods);
    (0..n)
        .map(|_| {
            let c = model.draw();
            (c, model.nodes(), model.pods())
        })
        .collect()
}

#[test]
fn the_same_seed_draws_the_same_changes_in_the_same_order() {
    let seed: u64 = env("SOAK_SEED", 34);
    let a = draws(seed, 30, 900, 5000);
    let b = draws(seed, 30, 900, 5000);
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "seed {seed}: change {i} differs between two draws");
    }
    let other = draws(seed + 1, 30, 900, 5000);
    assert_ne!(
        a,
        other,
        "seeds {seed} and {} drew the same changes",
        seed + 1
    );
    // Every kind is drawn, each change writes something, and the churn keeps the cluster near
    // the load: node creations stop 10% above it and removals 10% below; pod creations stop
    // 10% above it (a ReplicaSet scaled by 4 at most past that), deletions 10% below, where
    // half the draws create pods, and a removed node takes its pods (30 here on average,
    // more on a busy node) along.
    let kinds: std::collections::BTreeSet<&str> = a.iter().map(|(c, _, _)| c.kind).collect();
    assert_eq!(kinds.len(), KINDS.len(), "seed {seed}: {kinds:?}");
    for (i, (c, nodes, pods)) in a.iter().enumerate() {
        assert!(
            !c.ops.is_empty(),
            "seed {seed}: change {i} ({}) writes nothing",
            c.kind
        );
        assert!(
            (26..=34).contains(nodes),
            "seed {seed}: {nodes} nodes after change {i}"
        );
        assert!(
            (450..=1000).contains(pods),
            "seed {seed}: {pods} pods after change {i}"
        );
    }
    let mean = a.iter().map(|(_, _, p)| p).sum::<usize>() / a.len();
    assert!(
        (765..=990).contains(&mean),
        "seed {seed}: {mean} pods on average"
    );
}

/// The changes of a small cluster (so many touch the same objects) run through the pool with
/// jobs of random length: no object is ever written by two at once, the changes on one object
/// run in the order drawn, several run at once, never more than the workers, and draining
/// leaves none in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_two_changes_in_flight_write_one_object() {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::{Arc, Mutex};
    let seed: u64 = env("SOAK_SEED", 34);
    let workers = 8;
    let changes = draws(seed, 4, 40, 600);
    let mut rng = support::states::Rng::new(seed);
    let writing: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let order: Arc<Mutex<BTreeMap<String, Vec<usize>>>> = Arc::default();
    let overlaps: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut pool = Pool::new(workers);
    let mut conflicts = 0;
    let mut drawn: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, (change, _, _)) in changes.into_iter().enumerate() {
        let objects = change.objects();
        assert_eq!(
            objects.len(),
            change
                .ops
                .iter()
                .map(|o| o.object())
                .collect::<BTreeSet<_>>()
                .len()
        );
        conflicts += usize::from(objects.iter().any(|o| drawn.contains_key(o)));
        for o in &objects {
            drawn.entry(o.clone()).or_default().push(i);
        }
        let millis = rng.range(0, 6) as u64;
        let (writing, order, overlaps) = (writing.clone(), order.clone(), overlaps.clone());
        let mine = objects.clone();
        pool.submit(objects, async move {
            {
                let mut w = writing.lock().unwrap();
                for o in &mine {
                    if !w.insert(o.clone()) {
                        overlaps.lock().unwrap().push(format!("change {i} on {o}"));
                    }
                    order.lock().unwrap().entry(o.clone()).or_default().push(i);
                }
            }
            tokio::time::sleep(Duration::from_millis(millis)).await;
            let mut w = writing.lock().unwrap();
            for o in &mine {
                w.remove(o);
            }
        })
        .await;
        assert!(pool.in_flight() <= workers);
    }
    pool.drain().await;
    assert_eq!(pool.in_flight(), 0);
    let activity = &pool.activity;
    assert_eq!(
        activity.started.load(std::sync::atomic::Ordering::SeqCst),
        600
    );
    assert_eq!(activity.done.load(std::sync::atomic::Ordering::SeqCst), 600);
    assert!(
        conflicts > 100,
        "seed {seed}: too few changes share objects ({conflicts}) to test the rule"
    );
    let overlaps = overlaps.lock().unwrap();
    assert!(
        overlaps.is_empty(),
        "seed {seed}: written twice at once: {overlaps:?}"
    );
    assert_eq!(
        *order.lock().unwrap(),
        drawn,
        "seed {seed}: an object's changes ran out of the order drawn"
    );
    assert!(
        pool.peak > 1 && pool.peak <= workers,
        "seed {seed}: at most {} changes were in flight at once (8 workers)",
        pool.peak
    );
}
