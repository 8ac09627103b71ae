//! Predictions measured on many live states (issue 28). Starts one control plane whose
//! kubelet honours grace periods (`Components::realistic()`: 30% of each grace period,
//! readiness a second after start), then for each seed builds the state of
//! `tests/support/states.rs` and measures it: the dry-run against the real run, each
//! replacement against its prediction, the predicted after-state against the real one.
//!
//! ```text
//! cargo bench --bench predictions -- --seeds 1-24 [--json FILE]
//! cargo bench --bench predictions -- --seeds 3,7,9
//! ```
//!
//! Prints a line per seed, then per family and overall, with the issue's targets beside them.
//! See benches/predictions.md for what is measured and the figures.

#[path = "../tests/support/mod.rs"]
mod support;

use futures::FutureExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams};
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::time::Instant;
use support::states::{measure, plan_of, State};
use support::{Cluster, Components};

/// The issue's targets.
const TARGET_WITHIN: f64 = 95.0;
const TARGET_WITHIN_FAMILY: f64 = 90.0;
const TARGET_ERROR: f64 = 2.0;

fn usage() -> ! {
    eprintln!("usage: cargo bench --bench predictions -- --seeds 1-24|3,7,9 [--json FILE]");
    std::process::exit(2)
}

/// `1-24`, `3,7,9` or both (`1-5,9`).
fn parse_seeds(spec: &str) -> Vec<u64> {
    let mut seeds = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        let number = |s: &str| s.trim().parse::<u64>().unwrap_or_else(|_| usage());
        match part.split_once('-') {
            Some((a, b)) => seeds.extend(number(a)..=number(b)),
            None => seeds.push(number(part)),
        }
    }
    seeds
}

/// One seed's figures.
struct Row {
    seed: u64,
    family: String,
    policy: String,
    nodes: usize,
    pods: usize,
    summary: String,
    seconds: f64,
    /// None when the seed failed to build or measure (`failure`).
    measured: Option<Measured>,
    failure: Option<String>,
}

struct Measured {
    planned: usize,
    evicted: usize,
    dry_equals_real: bool,
    exact: usize,
    within: usize,
    total: usize,
    mean_error: f64,
    max_error: f64,
    own_node: usize,
    misses: Vec<String>,
    after_differences: Vec<String>,
}

fn percent(a: usize, b: usize) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".to_string())
}

async fn run_seed(cluster: &Cluster, seed: u64) -> Row {
    let client = cluster.client();
    let (family, policy) = plan_of(seed);
    let started = Instant::now();
    let result = AssertUnwindSafe(async {
        let state = State::build(&client, seed).await;
        let outcome = measure(cluster, &state).await;
        (state, outcome)
    })
    .catch_unwind()
    .await;
    let seconds = started.elapsed().as_secs_f64();
    match result {
        Ok((state, o)) => {
            // The state is done with: its pods go (its nodes stay, empty).
            let _ = Api::<Namespace>::all(client.clone())
                .delete(&state.namespace, &DeleteParams::default())
                .await;
            Row {
                seed,
                family: state.family.clone(),
                policy: state.policy.clone(),
                nodes: state.nodes.len(),
                pods: state.pods(),
                summary: state.summary.clone(),
                seconds,
                measured: Some(Measured {
                    planned: o.planned,
                    evicted: o.evicted,
                    dry_equals_real: o.dry_equals_real,
                    exact: o.exact,
                    within: o.within,
                    total: o.total,
                    mean_error: o.mean_error,
                    max_error: o.max_error,
                    own_node: o.own_node,
                    misses: o.misses,
                    after_differences: o.after_differences,
                }),
                failure: None,
            }
        }
        Err(e) => Row {
            seed,
            family: family.name().to_string(),
            policy: policy.name(),
            nodes: 0,
            pods: 0,
            summary: String::new(),
            seconds,
            measured: None,
            failure: Some(panic_message(&*e)),
        },
    }
}

fn print_row(r: &Row) {
    match (&r.measured, &r.failure) {
        (Some(m), _) if m.planned == 0 => println!(
            "{:>4} {:<13} {:<30} {:>5} {:>4}  nothing to do ({:.0} s)",
            r.seed, r.family, r.policy, r.nodes, r.pods, r.seconds
        ),
        (Some(m), _) => {
            println!(
                "{:>4} {:<13} {:<30} {:>5} {:>4} {:>7} {:>7} {:>3}/{:<3} {:>5.0}% {:>6.0}% {:>5.2} {:>6.2} {:>3} {:>8} {:>6} ({:.0} s)",
                r.seed,
                r.family,
                r.policy,
                r.nodes,
                r.pods,
                m.planned,
                m.evicted,
                m.within,
                m.total,
                percent(m.exact, m.total),
                percent(m.within, m.total),
                m.mean_error,
                m.max_error,
                m.own_node,
                if m.dry_equals_real { "yes" } else { "NO" },
                m.misses.len(),
                r.seconds
            );
            for miss in &m.misses {
                println!("       miss: {miss}");
            }
        }
        (None, failure) => println!(
            "{:>4} {:<13} {:<30}  FAILED ({:.0} s): {}",
            r.seed,
            r.family,
            r.policy,
            r.seconds,
            failure
                .as_deref()
                .unwrap_or("?")
                .lines()
                .next()
                .unwrap_or("?")
        ),
    }
}

/// Sums over some rows.
#[derive(Default)]
struct Sums {
    seeds: usize,
    nothing: usize,
    failed: usize,
    planned: usize,
    evicted: usize,
    exact: usize,
    within: usize,
    total: usize,
    errors: Vec<f64>,
    max_error: f64,
    dry_equal: usize,
    own_node: usize,
    misses: usize,
}

impl Sums {
    fn add(&mut self, r: &Row) {
        self.seeds += 1;
        let Some(m) = &r.measured else {
            self.failed += 1;
            return;
        };
        if m.planned == 0 {
            self.nothing += 1;
        }
        self.planned += m.planned;
        self.evicted += m.evicted;
        self.exact += m.exact;
        self.within += m.within;
        self.total += m.total;
        if m.planned > 0 {
            self.errors.push(m.mean_error);
            self.max_error = self.max_error.max(m.max_error);
        }
        self.dry_equal += usize::from(m.dry_equals_real);
        self.own_node += m.own_node;
        self.misses += m.misses.len();
    }

    fn mean_error(&self) -> f64 {
        self.errors.iter().sum::<f64>() / self.errors.len().max(1) as f64
    }

    fn measured(&self) -> usize {
        self.seeds - self.failed
    }

    fn line(&self, name: &str) -> String {
        format!(
            "{name:<13} seeds {:>2} (nothing to do {}, failed {}); planned {:>4}, evicted {:>4}; exact {:>3}/{:<3} {:>5.1}%; within {:>3}/{:<3} {:>5.1}%; after-state error mean {:.2} max {:.2}; dry-run = real {}/{}; own-node {}; misses {}",
            self.seeds,
            self.nothing,
            self.failed,
            self.planned,
            self.evicted,
            self.exact,
            self.total,
            percent(self.exact, self.total),
            self.within,
            self.total,
            percent(self.within, self.total),
            self.mean_error(),
            self.max_error,
            self.dry_equal,
            self.measured(),
            self.own_node,
            self.misses
        )
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "seeds": self.seeds, "nothingToDo": self.nothing, "failed": self.failed,
            "planned": self.planned, "evicted": self.evicted,
            "exact": self.exact, "within": self.within, "total": self.total,
            "exactPercent": percent(self.exact, self.total),
            "withinPercent": percent(self.within, self.total),
            "meanError": self.mean_error(), "maxError": self.max_error,
            "dryEqualsReal": self.dry_equal, "measured": self.measured(),
            "ownNode": self.own_node, "misses": self.misses,
        })
    }
}

fn row_json(r: &Row) -> serde_json::Value {
    let mut v = serde_json::json!({
        "seed": r.seed, "family": r.family, "policy": r.policy, "nodes": r.nodes,
        "pods": r.pods, "state": r.summary, "seconds": r.seconds, "failure": r.failure,
    });
    if let Some(m) = &r.measured {
        v["planned"] = m.planned.into();
        v["evicted"] = m.evicted.into();
        v["dryEqualsReal"] = m.dry_equals_real.into();
        v["exact"] = m.exact.into();
        v["within"] = m.within.into();
        v["total"] = m.total.into();
        v["meanError"] = m.mean_error.into();
        v["maxError"] = m.max_error.into();
        v["ownNode"] = m.own_node.into();
        v["misses"] = m.misses.clone().into();
        v["afterDifferences"] = m.after_differences.clone().into();
    }
    v
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

fn main() {
    // `cargo bench` adds `--bench`; every other argument is ours.
    let mut seeds = None;
    let mut json = None;
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seeds" => seeds = Some(parse_seeds(&args.next().unwrap_or_else(|| usage()))),
            "--json" => json = Some(args.next().unwrap_or_else(|| usage())),
            _ => usage(),
        }
    }
    let seeds = seeds.unwrap_or_else(|| parse_seeds("1-24"));
    let cluster = Cluster::start(Components::realistic());
    eprintln!("control plane ready in {:.1?}", cluster.startup_time());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    println!(
        "seed family        policy                         nodes pods planned evicted  within exact% within%  err   maxerr own dry=real misses"
    );
    let mut rows = Vec::new();
    for seed in seeds {
        let row = runtime.block_on(run_seed(&cluster, seed));
        print_row(&row);
        rows.push(row);
    }
    cluster.assert_running();

    let mut families: BTreeMap<String, Sums> = BTreeMap::new();
    let mut all = Sums::default();
    for r in &rows {
        families.entry(r.family.clone()).or_default().add(r);
        all.add(r);
    }
    println!();
    for (name, s) in &families {
        println!("{}", s.line(name));
    }
    println!("{}", all.line("overall"));
    let within = percent(all.within, all.total);
    let worst = families
        .iter()
        .filter(|(_, s)| s.total > 0)
        .map(|(n, s)| (n.clone(), percent(s.within, s.total)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    println!();
    println!(
        "target: within alternatives overall >= {TARGET_WITHIN}%: {within:.1}% ({})",
        verdict(within >= TARGET_WITHIN)
    );
    if let Some((name, w)) = &worst {
        println!(
            "target: every family >= {TARGET_WITHIN_FAMILY}% within: lowest {name} {w:.1}% ({})",
            verdict(*w >= TARGET_WITHIN_FAMILY)
        );
    }
    println!(
        "target: mean after-state error <= {TARGET_ERROR} points: {:.2} ({})",
        all.mean_error(),
        verdict(all.mean_error() <= TARGET_ERROR)
    );
    println!(
        "target: dry-run = real run on 100% of the seeds: {}/{} ({})",
        all.dry_equal,
        all.measured(),
        verdict(all.dry_equal == all.measured() && all.failed == 0)
    );
    if let Some(path) = json {
        let out = serde_json::json!({
            "seeds": rows.iter().map(row_json).collect::<Vec<_>>(),
            "families": families.iter().map(|(n, s)| (n.clone(), s.json())).collect::<serde_json::Map<_, _>>(),
            "overall": all.json(),
        });
        std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap())
            .unwrap_or_else(|e| panic!("writing {path}: {e}"));
        eprintln!("wrote {path}");
    }
}
