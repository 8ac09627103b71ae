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
//! Bounded by default (10 nodes, 300 pods, about two minutes); `benches/soak/run` runs it
//! long and large through the same variables:
//!
//! | env | default | meaning |
//! | --- | --- | --- |
//! | `SOAK_SEED` | 34 | the generator's seed (printed; the same seed draws the same changes) |
//! | `SOAK_NODES`, `SOAK_PODS` | 10, 300 | the cluster loaded before the churn |
//! | `SOAK_SECONDS` | 60 | seconds of churn in all, split between the checkpoints |
//! | `SOAK_CHECKPOINTS` | 5 | checkpoints after churn (one more on the loaded cluster) |
//! | `SOAK_RATE` | 20 | changes a second between bursts |
//! | `SOAK_BURST`, `SOAK_BURST_PERCENT` | 150, 5 | changes in a burst, and the chance a second of one |
//! | `SOAK_INTERVAL` | `1s` | `--descheduling-interval` |
//! | `SOAK_SETTLE_MS` | 1000 | how long after the last change the compared cycle starts at the earliest |
//! | `SOAK_WORKERS` | 16 | concurrent requests while loading |
//! | `SOAK_WARMUP` | 20 | cycles before memory growth is measured |
//! | `SOAK_MAX_RSS_GROWTH` | unset | fail when resident memory grew more than this (percent) after warm-up |
//! | `SOAK_SAMPLES` | unset | a CSV file for the per-cycle samples (cycle, resident KiB, CPU ticks) |
//! | `SOAK_DIR` | `target/soak/seed-<seed>-<time>` | where checkpoints keep what differed |

mod support;

use chrono::Utc;
use std::time::{Duration, Instant};
use support::churn::{Churn, KINDS};
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
    let seconds: u64 = env("SOAK_SECONDS", 60);
    let checkpoints: u32 = env("SOAK_CHECKPOINTS", 5);
    let rate: f64 = env("SOAK_RATE", 20.0);
    let burst: usize = env("SOAK_BURST", 150);
    let burst_percent: i64 = env("SOAK_BURST_PERCENT", 5);
    let interval: String = env("SOAK_INTERVAL", "1s".to_string());
    let settle = Duration::from_millis(env("SOAK_SETTLE_MS", 1000));
    let workers: usize = env("SOAK_WORKERS", 16);
    let warmup: usize = env("SOAK_WARMUP", 20);
    let max_growth: Option<f64> = std::env::var("SOAK_MAX_RSS_GROWTH")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| v.parse().expect("SOAK_MAX_RSS_GROWTH: a number (percent)"));
    eprintln!(
        "soak: seed {seed} (SOAK_SEED={seed} replays it); {nodes} nodes, {pods} pods, {seconds} s of churn at {rate}/s, bursts of {burst} ({burst_percent}% a second), {checkpoints} checkpoints"
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
    let mut soak = Soak::start(&policy, &kubeconfig, &work, &interval, seed);

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
        let t = Instant::now();
        churn.run(phase, rate, burst, burst_percent).await;
        let applied = churn.total() - before;
        let quiet = Utc::now();
        let c = check(
            soak.checkpoint(quiet, settle).await,
            &format!("checkpoint {}", i + 2),
        );
        total_evictions += c.evictions;
        eprintln!(
            "soak: checkpoint {} after {applied} changes in {:.1?} ({:.0}/s): {} nodes, {} pods, {} evictions planned, compared {:.1?} after the last change: identical",
            i + 2,
            t.elapsed(),
            applied as f64 / t.elapsed().as_secs_f64(),
            c.nodes,
            c.pods,
            c.evictions,
            c.waited,
        );
    }
    // The check can fail: a cycle that read the cluster before changes differs from a list
    // made after them, and the difference is kept.
    let before = Utc::now();
    for _ in 0..20 {
        churn.step().await;
    }
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
    let (resources, growth) = resource_summary(&soak.samples(), warmup);
    if let Some(path) = std::env::var_os("SOAK_SAMPLES").filter(|p| !p.is_empty()) {
        soak.write_samples(std::path::Path::new(&path));
    }
    let stderr = soak.stop().await;
    assert!(!stderr.contains("panicked"), "{stderr}");
    eprintln!("soak: {resources}");
    eprintln!(
        "soak: seed {seed}: {} changes applied in {:.1?} ({}), {} checkpoints, {total_evictions} planned evictions compared, 0 differences",
        churn.total(),
        started.elapsed(),
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
    if let (Some(max), Some(growth)) = (max_growth, growth) {
        assert!(
            growth <= max,
            "resident memory grew {growth:.1}% after warm-up (at most {max}%): {resources}"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}
