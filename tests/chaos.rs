//! The descheduler in continuous mode behind the chaos proxy ([`support::chaos`]), each fault
//! injected at random points (seeded: `DESCHEDULER_CHAOS_SEED` replays a failure). The cluster
//! is static during a test, so every plan a cycle reports must be the plan of the cluster
//! listed straight from the API server (else the cycle planned on a partial or stale model);
//! a cycle may instead say it could not read the cluster. The process keeps running, never
//! panics, says what it did (relists, retries), and ends with 0 on SIGTERM. Evictions: a 429
//! with Retry-After is not retried sooner, an eviction whose answer was lost is not
//! repeated, and is reported as what it was, and the global and per-node eviction rates hold
//! over many evictions and refusals.

mod support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;
use support::chaos::{ChaosProxy, EvictionFault, Fault};
use support::process::{run_bin, Descheduler};
use support::*;

const DUPLICATES: &str = "apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: spread
  pluginConfig:
  - name: RemoveDuplicates
  plugins:
    balance:
      enabled: [RemoveDuplicates]
";

fn seed() -> u64 {
    std::env::var("DESCHEDULER_CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(34)
}

/// A control plane of the test's own with nine replicas stacked on one node and two more
/// nodes (RemoveDuplicates plans six evictions), the policy written, and the proxy in front.
struct Stage {
    cluster: Cluster,
    client: kube::Client,
    ns: String,
    dir: tempfile::TempDir,
    policy: std::path::PathBuf,
    proxy: ChaosProxy,
    kubeconfig: std::path::PathBuf,
}

async fn stage(seed: u64, request_timeout: Duration) -> Stage {
    let cluster = Cluster::start(Components::all());
    let client = cluster.client();
    create_node(&client, NodeConfig::new(&unique("n"))).await;
    let ns = create_namespace(&client, "chaos").await;
    run_replicaset(&client, &ns, "web", 9, &PodConfig::new().cpu("100m")).await;
    for _ in 0..2 {
        create_node(&client, NodeConfig::new(&unique("n"))).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), DUPLICATES);
    let proxy = ChaosProxy::start(&cluster, seed, request_timeout).await;
    let kubeconfig = dir.path().join("chaos.kubeconfig");
    proxy.write_kubeconfig(&kubeconfig);
    Stage {
        cluster,
        client,
        ns,
        dir,
        policy,
        proxy,
        kubeconfig,
    }
}

/// The reports printed so far, one per cycle.
fn reports(p: &Descheduler) -> Vec<Value> {
    serde_json::Deserializer::from_str(&p.output())
        .into_iter::<Value>()
        .map_while(Result::ok)
        .collect()
}

/// What a report planned: its evictions (pod, node, plugin, reason, destination) and the
/// nodes' usage before and after.
fn plan(report: &Value) -> Value {
    let evictions: Vec<Value> = report["evictions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            serde_json::json!([
                e["pod"],
                e["node"],
                e["plugin"],
                e["reason"],
                e["destination"]
            ])
        })
        .collect();
    serde_json::json!({"evictions": evictions, "nodes": report["nodes"]})
}

/// The plan of the cluster listed straight from the API server (a one-shot dry run).
async fn reference(s: &Stage) -> Value {
    let run = run_bin(&[
        "--policy-config-file",
        s.policy.to_str().unwrap(),
        "--kubeconfig",
        s.cluster.kubeconfig().to_str().unwrap(),
        "--dry-run",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let plan = plan(&report);
    assert_eq!(
        plan["evictions"].as_array().unwrap().len(),
        6,
        "{}",
        run.stdout
    );
    plan
}

#[tokio::test]
async fn every_read_fault_at_random_points_never_gives_a_plan_of_a_partial_model() {
    let seed = seed();
    let timeout = Duration::from_secs(2);
    let s = stage(seed, timeout).await;
    let want = reference(&s).await;
    // Every fault at once from the start: the first lists meet them too (a cycle waits for a
    // complete list of everything).
    s.proxy.inject(&Fault::ALL, 30);
    let p = Descheduler::spawn(&[
        "--policy-config-file",
        s.policy.to_str().unwrap(),
        "--kubeconfig",
        s.kubeconfig.to_str().unwrap(),
        "--dry-run",
        "--descheduling-interval=1s",
        "--request-timeout=2s",
        // Debug: a watch cut and watched again is said at that level.
        "--v=3",
        "-o",
        "json",
    ]);
    let context = |p: &Descheduler| {
        format!(
            "seed {seed} (DESCHEDULER_CHAOS_SEED replays it); injected {:?}\n{}",
            s.proxy.injections(),
            tail_of(&p.stderr(), 60)
        )
    };
    assert!(
        wait_until(TIMEOUT, || async { !reports(&p).is_empty() }).await,
        "a first cycle: {}",
        context(&p)
    );
    let first = s.proxy.injected().values().sum::<u64>();
    // Each fault kind in turn, for a few seconds, at random points: every watch is cut each
    // second (a load balancer), and of the requests that come again (watches; lists after a
    // watch's 410 or failure) half meet the fault. Faults that only lists can meet come with
    // 410s on the watches, so that lists are made.
    let mut results = BTreeMap::new();
    for fault in Fault::ALL {
        let before = s.proxy.injected();
        let cycles = reports(&p).len();
        let mut faults = vec![fault];
        if !matches!(fault, Fault::Gone | Fault::DropWatch) {
            faults.push(Fault::Gone);
        }
        s.proxy.inject(&faults, 50);
        for _ in 0..6 {
            s.proxy.cut_watches();
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        s.proxy.inject(&[], 0);
        let after = s.proxy.injected();
        let n = after.get(&fault).unwrap_or(&0) - before.get(&fault).unwrap_or(&0);
        results.insert(fault, (n, reports(&p).len() - cycles));
        assert!(n >= 2, "{fault:?} injected {n} times: {}", context(&p));
        assert!(
            p.stderr().contains("panicked").then_some(()).is_none(),
            "{}",
            context(&p)
        );
    }
    // Faults over: the cluster is read again and the plan is the cluster's.
    let seen = reports(&p).len();
    assert!(
        wait_until(Duration::from_secs(60), || async {
            reports(&p).len() > seen + 2
        })
        .await,
        "cycles go on after the faults: {}",
        context(&p)
    );
    let all = reports(&p);
    for (i, r) in all.iter().enumerate() {
        assert_eq!(
            plan(r),
            want,
            "cycle {i} of {} planned something else than the cluster: {}",
            all.len(),
            context(&p)
        );
    }
    let log = p.stderr();
    assert!(log.contains("listing again"), "410s named: {}", context(&p));
    assert!(log.contains("watch interrupted"), "{}", context(&p));
    assert!(log.contains("list failed; retrying"), "{}", context(&p));
    assert!(log.contains("watch failed; retrying"), "{}", context(&p));
    assert!(!log.contains("panicked"), "{}", context(&p));
    eprintln!("seed {seed}: {first} faults before the first cycle; per fault (injections, cycles reported meanwhile): {results:?}; {} cycles in all, every plan the cluster's", all.len());
    assert_eq!(p.terminate().await, Some(0), "SIGTERM ends it cleanly");
}

/// The last `lines` lines of `text`.
fn tail_of(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// (pod, result) of the evictions of every report so far.
fn results(p: &Descheduler) -> Vec<(String, String)> {
    reports(p)
        .iter()
        .flat_map(|r| r["evictions"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            (
                e["pod"].as_str().unwrap_or("").to_string(),
                e["result"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// A real continuous run every `interval` through the proxy, with `more`.
fn evicting(s: &Stage, interval: &str, more: &[&str]) -> Descheduler {
    let mut args = vec![
        "--policy-config-file".to_string(),
        s.policy.to_str().unwrap().to_string(),
        "--kubeconfig".to_string(),
        s.kubeconfig.to_str().unwrap().to_string(),
        format!("--descheduling-interval={interval}"),
        "-o".to_string(),
        "json".to_string(),
    ];
    args.extend(more.iter().map(|s| s.to_string()));
    Descheduler::spawn(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[tokio::test]
async fn an_eviction_answered_429_with_retry_after_is_not_tried_again_sooner() {
    let seed = seed();
    let s = stage(seed, Duration::from_secs(60)).await;
    let retry_after = 3;
    s.proxy.evictions_get(EvictionFault::TooMany {
        times: 2,
        seconds: retry_after,
    });
    // No cooldown: a refused pod may be tried again at the next cycle, a second later, unless
    // the server asked for longer.
    let p = evicting(&s, "1s", &["--eviction-cooldown=0s"]);
    // Every pod asked for is refused twice, then evicted.
    assert!(
        wait_until(Duration::from_secs(90), || async {
            s.proxy
                .evictions()
                .iter()
                .filter(|e| e.forwarded && e.status == 201)
                .count()
                >= 3
        })
        .await,
        "evictions go through after their refusals: {:?}\n{}",
        s.proxy.evictions(),
        tail_of(&p.stderr(), 40)
    );
    let seen = s.proxy.evictions();
    let mut by_pod: BTreeMap<&str, Vec<&support::chaos::EvictionSeen>> = BTreeMap::new();
    for e in seen.iter().filter(|e| !e.dry_run) {
        by_pod.entry(&e.pod).or_default().push(e);
    }
    for (pod, asks) in &by_pod {
        for w in asks.windows(2) {
            if w[0].status == 429 {
                let gap = w[1].at - w[0].at;
                assert!(
                    gap >= Duration::from_secs(retry_after.into()),
                    "{pod} asked again {gap:?} after a 429 with Retry-After: {retry_after}: {asks:?}\n{}",
                    tail_of(&p.stderr(), 40)
                );
            }
        }
        assert!(
            asks.iter().filter(|e| e.status == 201).count() <= 1,
            "{pod} evicted once: {asks:?}"
        );
    }
    let refused = seen.iter().filter(|e| e.status == 429).count();
    let least = by_pod
        .values()
        .flat_map(|asks| {
            asks.windows(2)
                .filter(|w| w[0].status == 429)
                .map(|w| w[1].at - w[0].at)
        })
        .min();
    eprintln!("seed {seed}: {refused} evictions answered 429 (Retry-After: {retry_after}) over {} pods; shortest wait before asking again {least:?}", by_pod.len());
    assert!(!p.stderr().contains("panicked"), "{}", p.stderr());
    assert_eq!(p.terminate().await, Some(0));
    let _ = (&s.client, &s.ns, &s.dir);
}

#[tokio::test]
async fn an_eviction_whose_answer_is_lost_is_not_repeated_and_is_reported_as_done() {
    let seed = seed();
    let s = stage(seed, Duration::from_secs(60)).await;
    s.proxy.evictions_get(EvictionFault::CutAfterForwarding);
    let p = evicting(&s, "2s", &[]);
    // The six duplicates go, each with its answer lost.
    assert!(
        wait_until(Duration::from_secs(90), || async {
            s.proxy
                .evictions()
                .iter()
                .filter(|e| e.forwarded && e.status == 201)
                .count()
                >= 6
        })
        .await,
        "the six evictions: {:?}\n{}",
        s.proxy.evictions(),
        tail_of(&p.stderr(), 40)
    );
    // A few more cycles: none evicts a pod again.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let seen = s.proxy.evictions();
    let mut evicted: BTreeMap<&str, usize> = BTreeMap::new();
    for e in seen.iter().filter(|e| !e.dry_run && e.forwarded) {
        *evicted.entry(&e.pod).or_default() += 1;
    }
    assert!(
        evicted.values().all(|&n| n == 1),
        "no pod asked to be evicted twice: {evicted:?}\n{}",
        tail_of(&p.stderr(), 40)
    );
    eprintln!(
        "seed {seed}: {} evictions whose answer was lost, {} pods asked for once each",
        seen.iter().filter(|e| e.forwarded && !e.dry_run).count(),
        evicted.len()
    );
    // The reports say what happened: each pod evicted, none left as an error.
    let results = results(&p);
    for pod in evicted.keys() {
        let of_pod: Vec<&String> = results
            .iter()
            .filter(|(p, _)| p == pod)
            .map(|(_, r)| r)
            .collect();
        assert!(
            of_pod.iter().any(|r| *r == "evicted"),
            "{pod}: {of_pod:?}\n{}",
            tail_of(&p.stderr(), 40)
        );
    }
    assert!(!p.stderr().contains("panicked"), "{}", p.stderr());
    assert_eq!(p.terminate().await, Some(0));
    let _ = (&s.client, &s.ns, &s.dir);
}

#[tokio::test]
async fn a_whole_list_slower_than_the_request_timeout_is_read_in_pages() {
    let seed = seed();
    let s = stage(seed, Duration::from_secs(2)).await;
    let want = reference(&s).await;
    // The whole list of pods outlasts the client's 2 s (the other lists come at once); its
    // pages come at once, two items each (so that the nine pods take five pages).
    s.proxy.slow_whole_lists("/api/v1/pods", Some(2));
    let p = Descheduler::spawn(&[
        "--policy-config-file",
        s.policy.to_str().unwrap(),
        "--kubeconfig",
        s.kubeconfig.to_str().unwrap(),
        "--dry-run",
        "--descheduling-interval=1s",
        "--request-timeout=2s",
        "-o",
        "json",
    ]);
    assert!(
        wait_until(Duration::from_secs(60), || async { reports(&p).len() >= 3 }).await,
        "cycles come although no whole list does: {:?}\n{}",
        s.proxy.lists_answered(),
        tail_of(&p.stderr(), 40)
    );
    for r in reports(&p) {
        assert_eq!(plan(&r), want, "{}", tail_of(&p.stderr(), 40));
    }
    let (whole, pages) = s.proxy.lists_answered();
    assert!(
        pages >= 5,
        "the pods in five pages: {pages} pages, {whole} whole lists\n{}",
        p.stderr()
    );
    assert!(
        p.stderr().contains("listing it in pages from now on"),
        "{}",
        p.stderr()
    );
    // The pods were tried in one whole list, and no more.
    let held = s.proxy.whole_lists_held();
    assert_eq!(held, 1, "{held} whole lists of pods");
    // A relist (every watch's version expired) goes to pages at once.
    let gone = s.proxy.injected().get(&Fault::Gone).copied().unwrap_or(0);
    s.proxy.inject(&[Fault::Gone], 100);
    s.proxy.cut_watches();
    tokio::time::sleep(Duration::from_secs(3)).await;
    s.proxy.inject(&[], 0);
    assert!(s.proxy.injected()[&Fault::Gone] > gone);
    let seen = reports(&p).len();
    assert!(
        wait_until(Duration::from_secs(30), || async {
            reports(&p).len() > seen + 2
        })
        .await,
        "{}",
        tail_of(&p.stderr(), 40)
    );
    for r in reports(&p) {
        assert_eq!(plan(&r), want, "{}", tail_of(&p.stderr(), 40));
    }
    assert_eq!(
        s.proxy.whole_lists_held(),
        held,
        "relists in pages, no whole list tried again"
    );
    assert!(s.proxy.lists_answered().1 > pages);
    // And a one-shot run gets there too.
    let once = run_bin(&[
        "--policy-config-file",
        s.policy.to_str().unwrap(),
        "--kubeconfig",
        s.kubeconfig.to_str().unwrap(),
        "--dry-run",
        "--request-timeout=2s",
        "-o",
        "json",
    ])
    .await;
    assert_eq!(once.code, Some(0), "{}", once.stderr);
    assert_eq!(plan(&serde_json::from_str(&once.stdout).unwrap()), want);
    assert!(!p.stderr().contains("panicked"), "{}", p.stderr());
    assert_eq!(p.terminate().await, Some(0));
}

/// The most calls a rate limiter of `qps` with `burst` lets through in any window, checked
/// on every pair of calls `(i, j)` (times in seconds): `j - i + 1 <= burst + qps * (t_j -
/// t_i)`, with `slack` seconds for the time between the limiter and the proxy (the executor
/// takes a call's token, then re-checks the pod, then calls: a slow re-check delays one call
/// and not the next). The tightest
/// window: its calls, and how much sooner than the limit allows they could have come (0: at
/// the limit).
fn held_to(times: &[f64], qps: f64, burst: f64, slack: f64) -> Result<(usize, f64), String> {
    let mut tightest = (0, f64::MAX);
    // How much longer the window is than the calls in it need: the least is the tightest.
    for i in 0..times.len() {
        for j in i + 1..times.len() {
            let calls = (j - i + 1) as f64;
            let window = times[j] - times[i];
            if calls > burst + qps * (window + slack) {
                return Err(format!(
                    "{calls} calls in {window:.3} s, more than {burst} + {qps}/s allow"
                ));
            }
            let spare = window - (calls - burst) / qps;
            if spare < tightest.1 {
                tightest = (j - i + 1, spare);
            }
        }
    }
    Ok((tightest.0, tightest.1))
}

#[tokio::test]
async fn the_global_and_per_node_eviction_rates_hold_under_refusals_and_many_evictions() {
    let seed = seed();
    let cluster = Cluster::start(Components::all());
    let client = cluster.client();
    // Sixteen replicas of each of two ReplicaSets, each stacked on a node of its own, then
    // two empty nodes: RemoveDuplicates plans twelve evictions from each of the two.
    let (a, b) = (unique("a"), unique("b"));
    create_node(&client, NodeConfig::new(&a)).await;
    let ns = create_namespace(&client, "rates").await;
    run_replicaset(&client, &ns, "one", 16, &PodConfig::new().cpu("10m")).await;
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client.clone());
    let cordon = |node: String, on: bool| {
        let nodes = nodes.clone();
        async move {
            nodes
                .patch(
                    &node,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(serde_json::json!({"spec": {"unschedulable": on}})),
                )
                .await
                .unwrap();
        }
    };
    cordon(a.clone(), true).await;
    create_node(&client, NodeConfig::new(&b)).await;
    run_replicaset(&client, &ns, "two", 16, &PodConfig::new().cpu("10m")).await;
    cordon(a.clone(), false).await;
    for _ in 0..2 {
        create_node(&client, NodeConfig::new(&unique("n"))).await;
    }
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), &ns);
    let node_of: BTreeMap<String, String> = pods
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| {
            (
                format!("{ns}/{}", p.metadata.name.unwrap()),
                p.spec.unwrap().node_name.unwrap(),
            )
        })
        .collect();
    assert!(node_of.values().filter(|n| **n == a).count() == 16);
    assert!(node_of.values().filter(|n| **n == b).count() == 16);
    let dir = tempfile::tempdir().unwrap();
    let policy = write_policy(dir.path(), DUPLICATES);
    let proxy = ChaosProxy::start(&cluster, seed, Duration::from_secs(60)).await;
    let kubeconfig = dir.path().join("rates.kubeconfig");
    proxy.write_kubeconfig(&kubeconfig);
    // Each pod's first eviction answered 429 (Retry-After: 1): twice the calls, and the
    // refused ones are asked again in later cycles.
    proxy.evictions_get(EvictionFault::TooMany {
        times: 1,
        seconds: 1,
    });
    let (qps, burst, node_qps, node_burst) = (4.0, 2.0, 1.5, 1.0);
    let p = Descheduler::spawn(&[
        "--policy-config-file",
        policy.to_str().unwrap(),
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--descheduling-interval=1s",
        "--eviction-cooldown=0s",
        "--eviction-qps=4",
        "--eviction-burst=2",
        "--node-eviction-qps=1.5",
        "--node-eviction-burst=1",
        "-o",
        "json",
    ]);
    let done = |proxy: &ChaosProxy| {
        proxy
            .evictions()
            .iter()
            .filter(|e| e.forwarded && e.status == 201)
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(120), || async { done(&proxy) >= 20 }).await,
        "{} evictions done: {:?}\n{}",
        done(&proxy),
        proxy.evictions(),
        tail_of(&p.stderr(), 40)
    );
    assert_eq!(p.terminate().await, Some(0));
    let calls: Vec<_> = proxy
        .evictions()
        .into_iter()
        .filter(|e| !e.dry_run)
        .collect();
    let start = calls[0].at;
    let at = |e: &support::chaos::EvictionSeen| (e.at - start).as_secs_f64();
    let all: Vec<f64> = calls.iter().map(at).collect();
    let refused = calls.iter().filter(|e| e.status == 429).count();
    assert!(refused >= 10, "refusals in the mix: {refused}");
    // Without the limiters, the twelve calls of a node's plan would come within a fraction of
    // a second: far more than half a second of slack lets through.
    let slack = 0.5;
    let (n, margin) =
        held_to(&all, qps, burst, slack).unwrap_or_else(|e| panic!("global rate: {e}"));
    eprintln!(
        "seed {seed}: {} eviction calls ({refused} answered 429) in {:.1} s; global {qps}/s burst {burst}: tightest {n} calls {margin:.3} s longer than the limit needs",
        all.len(),
        all.last().unwrap()
    );
    for node in [&a, &b] {
        let times: Vec<f64> = calls
            .iter()
            .filter(|e| node_of.get(&e.pod) == Some(node))
            .map(at)
            .collect();
        assert!(times.len() >= 8, "{node}: {} calls", times.len());
        let (n, margin) = held_to(&times, node_qps, node_burst, slack)
            .unwrap_or_else(|e| panic!("{node}'s rate: {e}"));
        eprintln!(
            "node {node}: {} calls at {node_qps}/s burst {node_burst}: tightest {n} calls {margin:.3} s longer than the limit needs",
            times.len()
        );
    }
}
