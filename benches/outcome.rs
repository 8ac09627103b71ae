//! The outcome of continuous descheduling against upstream v0.36.0 and against the best
//! possible (issue 29). Starts one control plane whose kubelet honours grace periods
//! (`Components::realistic()`), then for each seed builds the start state of its scenario
//! family (`tests/support/outcome.rs`) once per binary (the same seed draws the same nodes and
//! Deployments; kube-scheduler places the pods), runs the binary in continuous mode for a
//! number of cycles while watching the pods and PDBs, and measures the end state; beside them,
//! the integer program's fewest moves reaching the thresholds from each start state.
//!
//! ```text
//! cargo bench --bench outcome -- --seeds 1-6 [--cycles 5] [--interval 20s] [--json FILE]
//!     [--only ours|ours-outcome|upstream|all] [--families all|new-nodes,big-pods,...] [--cooldown 10m]
//!     [--await-placement] [--ilp-seconds 20]
//! cargo bench --bench outcome -- --witness DECISION_LOG_DIR --family NAME --seed N
//!     --cap-evictions N [--cap-duplicates N] [--cap-spread] [--cycles 5] [--sequences 200]
//! cargo bench --bench outcome -- --replay DECISION_LOG_DIR --family NAME --seed N
//!     [--binary ours|ours-outcome] [--outcome-arg 'KEY: VALUE']... [--cycles 5] [--interval 20s]
//!     [--cooldown 10m]
//! ```
//!
//! The second form needs no cluster: it searches plans kube-scheduler carries out
//! (`tests/support/witness.rs`) from the start state a run of ours kept
//! (`OUTCOME_KEEP_DECISIONS=DIR` keeps each run's decision log, with its snapshots, under
//! `DIR/<namespace>-<binary>`), within the cap given (upstream's figures on that seed). The
//! third needs none either: it plans our binary's policy cycle after cycle from such a start
//! state, each cycle on the cluster the last one left (`tests/support/replay.rs`), to try a
//! planner change on the kept start states before a live run.
//!
//! Seed `s` builds family `(s - 1) % 6` (seeds 1-6 cover every family once) unless `--families`
//! names some (`all`: every family for every seed). See benches/outcome.md.

#[path = "../tests/support/mod.rs"]
mod support;

use futures::FutureExt;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::time::Duration;
use support::outcome::WitnessStart;
use support::outcome::{
    discard, run, Binary, Bound, Cap, IlpSolver, RunConfig, RunOutcome, Scenario,
};
use support::witness::{Effort, Witness};
use support::{Cluster, Components};

fn usage() -> ! {
    eprintln!(
        "usage: cargo bench --bench outcome -- --seeds 1-6|3,7 [--cycles 5] [--interval 20s] \
         [--json FILE] [--only ours|ours-outcome|upstream|all] [--families all|NAME,...] [--cooldown DURATION] \
         [--await-placement] [--ilp-seconds 20]\n\
         or:    cargo bench --bench outcome -- --witness DECISION_LOG_DIR --family NAME --seed N \
         --cap-evictions N [--cap-duplicates N] [--cap-spread] [--cycles 5] [--sequences 200]\n\
         or:    cargo bench --bench outcome -- --replay DECISION_LOG_DIR --family NAME --seed N \
         [--binary ours|ours-outcome] [--outcome-arg 'KEY: VALUE']... [--cycles 5] [--interval 20s] [--cooldown 10m]"
    );
    std::process::exit(2)
}

/// `--witness`: the search of plans kube-scheduler carries out, from a kept decision log's
/// first snapshot (the start state of that run), on the nodes holding its namespace's pods'
/// group, capped as given.
/// The start state a kept decision log holds (its first snapshot, that run's start), on the
/// nodes of its namespace's pods' group, with `scenario`'s thresholds for `seed`; and the
/// snapshot as kubectl listed it, and the time it was planned at.
fn kept_start(dir: &str, scenario: Scenario, seed: u64) -> (WitnessStart, serde_json::Value, i64) {
    let path = std::path::Path::new(dir);
    let namespace = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| {
            n.strip_suffix("-ours-outcome")
                .or_else(|| n.strip_suffix("-ours"))
        })
        .unwrap_or_else(|| panic!("{dir}: not a kept decision log (<namespace>-<binary>)"))
        .to_string();
    let file = support::outcome::first_snapshot_file(path).unwrap_or_else(|e| panic!("{e}"));
    let snapshot = descheduler::snapshot::decode::load_file(&file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let list = support::replay::load_list(&file).unwrap_or_else(|e| panic!("{e}"));
    let now = support::outcome::decision_now(&file).unwrap_or_else(|e| panic!("{e}"));
    let group = snapshot
        .pods
        .iter()
        .filter(|p| *p.namespace == *namespace)
        .find_map(|p| p.node_selector.get(support::states::GROUP_LABEL))
        .unwrap_or_else(|| {
            panic!(
                "{dir}: no pod of {namespace} with a {} nodeSelector",
                support::states::GROUP_LABEL
            )
        })
        .to_string();
    let nodes: Vec<String> = snapshot
        .nodes
        .iter()
        .filter(|n| n.labels.get(support::states::GROUP_LABEL) == Some(group.as_str()))
        .map(|n| n.name.to_string())
        .collect();
    let start = WitnessStart {
        snapshot: std::sync::Arc::new(snapshot),
        namespace,
        group,
        nodes,
        thresholds: scenario.thresholds(seed),
    };
    (start, list, now)
}

/// `--replay`: our binary's policy for `binary`, planned `cycles` cycles in a row without a
/// cluster from a kept decision log's start state, each cycle on the cluster the last one
/// left (replacements where the plan predicted them; every disruption budget back by the
/// next cycle), with the memory of a continuous run; prints each cycle and the end.
fn replay_of(
    dir: &str,
    scenario: Scenario,
    seed: u64,
    binary: Binary,
    cfg: &RunConfig,
    outcome_args: &[String],
) {
    let (start, list, now) = kept_start(dir, scenario, seed);
    let yaml = match binary {
        Binary::OursOutcome => {
            let yaml = support::outcome::outcome_policy_yaml(&start.group, &start.thresholds);
            // Each `--outcome-arg 'KEY: VALUE'` goes under OutcomeBalance's args.
            let extra: String = outcome_args
                .iter()
                .map(|a| format!("      {a}\n"))
                .collect();
            yaml.replacen(
                "      targetThresholds:",
                &format!("{extra}      targetThresholds:"),
                1,
            )
        }
        _ => support::outcome::policy_yaml(&start.group, &start.thresholds),
    };
    let policy = descheduler::policy::Policy::from_yaml(
        "policy.yaml",
        &yaml,
        &descheduler::plugins::REGISTRY,
    )
    .expect("the benchmark's policy loads");
    let pipeline = descheduler::framework::Pipeline::build(
        &policy,
        "policy.yaml",
        &descheduler::plugins::REGISTRY,
    )
    .expect("the benchmark's pipeline builds");
    let cooldown = cfg
        .cooldown
        .as_deref()
        .map_or(600, |c| parse_duration(c).as_secs() as i64);
    let measure = |snap: &descheduler::snapshot::ClusterSnapshot| {
        support::witness::measure(snap, &start.namespace, &start.nodes, start.thresholds)
    };
    let first = measure(&start.snapshot);
    let mut per_cycle = Vec::new();
    let mut churn = 0;
    let end = support::replay::replay(
        list,
        &pipeline,
        now,
        cfg.interval.as_secs() as i64,
        cfg.cycles,
        cooldown,
        |cycle, snap, plan| {
            let again = plan
                .evictions
                .iter()
                .filter(|e| support::replay::is_replacement(&snap.pod(e.pod).name))
                .count();
            churn += again;
            per_cycle.push(plan.evictions.len());
            println!(
                "cycle {}: {} evictions ({again} of replacements)",
                cycle + 1,
                plan.evictions.len()
            );
            for n in &plan.notes {
                println!("  note: {}", n.message);
            }
            for e in &plan.evictions {
                println!(
                    "  - {}: {} -> {}",
                    snap.pod(e.pod).name,
                    snap.node(e.node).name,
                    e.destination
                        .map_or("(none)".to_string(), |d| snap.node(d).name.to_string())
                );
            }
        },
    );
    let last = measure(&end);
    for d in &last.duplicates_at {
        println!("duplicate left: {d}");
    }
    // Where kube-scheduler would put a replacement of each pod of the namespace, as the
    // run leaves the cluster: what a move of it would do.
    if std::env::var_os("OUTCOME_REPLAY_PREDICT").is_some() {
        let sim = descheduler::sim::Simulation::new(&end);
        let ready = end.ready_nodes(&Default::default());
        let pct = |n: descheduler::snapshot::NodeId| {
            let (l, a) = (sim.load(n), &end.node(n).allocatable);
            format!(
                "{:.0}%/{:.0}%",
                100.0 * l.cpu as f64 / a.cpu.max(1) as f64,
                100.0 * l.memory as f64 / a.memory.max(1) as f64
            )
        };
        for (i, p) in end.pods.iter().enumerate() {
            let id = descheduler::snapshot::PodId::from_index(i);
            let Some(n) = end.pod_node(id) else { continue };
            if *p.namespace != *start.namespace {
                continue;
            }
            let to = sim.predict(id, &ready).map_or("(none)".to_string(), |pr| {
                let mut t = format!("{} {}", end.node(pr.node).name, pct(pr.node));
                for a in &pr.alternatives {
                    t += &format!(", {} {}", end.node(*a).name, pct(*a));
                }
                t
            });
            println!(
                "predict: {} on {} {} -> {to}",
                p.name,
                end.node(n).name,
                pct(n)
            );
        }
    }
    let total: usize = per_cycle.iter().sum();
    println!(
        "{} seed {seed}, {} replayed ({} planning nodes): {total} evictions ({}), churn {churn}; outside {} -> {}, duplicates excess {} -> {}, spread excess {} -> {}",
        scenario.name(),
        binary.name(),
        start.nodes.len(),
        per_cycle.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" "),
        first.outside,
        last.outside,
        first.duplicates_excess,
        last.duplicates_excess,
        first.spread_excess,
        last.spread_excess
    );
}

fn witness_of(dir: &str, scenario: Scenario, seed: u64, cap: Cap, cycles: usize, sequences: usize) {
    let (start, _, _) = kept_start(dir, scenario, seed);
    let w = start.search(
        cap,
        Effort {
            cycles,
            sequences,
            // Bounded by the sequences asked for, not by time.
            seconds: f64::INFINITY,
            seed,
        },
    );
    println!(
        "{} seed {seed}, {} ({} planning nodes): {}",
        scenario.name(),
        start.namespace,
        start.nodes.len(),
        witness_line(&cap, w.as_ref())
    );
    if let Some(w) = &w {
        for m in &w.plan {
            println!("  - {m}");
        }
    }
}

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

/// `20s`, `1m`, `500ms` or seconds.
fn parse_duration(s: &str) -> Duration {
    let (number, unit) = s
        .find(|c: char| !c.is_ascii_digit())
        .map_or((s, "s"), |i| s.split_at(i));
    let n: u64 = number.parse().unwrap_or_else(|_| usage());
    match unit {
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(60 * n),
        "ms" => Duration::from_millis(n),
        _ => usage(),
    }
}

fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".to_string())
}

/// One binary's run on one seed's state.
struct Row {
    scenario: Scenario,
    seed: u64,
    binary: Binary,
    summary: String,
    pods: usize,
    result: Result<RunOutcome, String>,
    /// From this run's start state, the fewest nodes outside within upstream's evictions
    /// and end state on the same seed ([`within_upstream`]); not for upstream's own run.
    within: Option<(Cap, Bound)>,
    /// From this run's start state, the search of kube-scheduler-placed sequences within the
    /// same cap ([`support::witness`]): None where it did not run (no start snapshot: a
    /// note says why), Some(None) where it found no plan within the cap.
    witness: Option<Option<Witness>>,
}

/// The cap upstream's run puts on a plan that is to end at least as well as it with at most
/// its evictions: its evictions as moves, its duplicates excess left, and every hard zone
/// spread kept where it left none above its skew (where it left some, spreads are not
/// constrained, which only lowers the bound).
fn upstream_cap(up: &RunOutcome) -> Cap {
    Cap {
        moves: up.evictions as f64,
        duplicates_excess: up.end.duplicates_excess as f64,
        spread: up.end.spread_excess == 0,
    }
}

/// For each other binary's run of one seed and family, the fewest nodes outside that any
/// plan reaching upstream's figures (evictions, duplicates, spread) can leave from that
/// run's start state. Above the best possible's nodes outside plus one, the issue's targets
/// (at most upstream's evictions, as well on every measure, within one node of the best
/// possible) cannot all be met there: they conflict.
fn within_upstream(rows: &mut [Row], ilp_seconds: f64, cycles: usize) {
    let Some(cap) = rows
        .iter()
        .find(|r| r.binary == Binary::Upstream)
        .and_then(|r| r.result.as_ref().ok())
        .map(upstream_cap)
    else {
        return;
    };
    let solver = IlpSolver::detect();
    for r in rows.iter_mut().filter(|r| r.binary != Binary::Upstream) {
        if let Ok(o) = &r.result {
            r.within = Some((cap, o.model.solve_within(&solver, cap, ilp_seconds)));
            r.witness = o.start_snapshot.as_ref().map(|s| {
                s.search(
                    cap,
                    Effort {
                        cycles,
                        sequences: WITNESS_SEQUENCES,
                        seconds: WITNESS_SECONDS,
                        seed: r.seed,
                    },
                )
            });
        }
    }
}

/// How many kube-scheduler-placed sequences [`within_upstream`] tries per start state, and
/// for how long at most.
const WITNESS_SEQUENCES: usize = 200;
const WITNESS_SECONDS: f64 = 60.0;

fn witness_line(cap: &Cap, w: Option<&Witness>) -> String {
    match w {
        Some(w) => format!(
            "the best plan kube-scheduler carries out found {}: {}",
            describe_cap(cap),
            w.describe()
        ),
        None => format!(
            "no plan kube-scheduler carries out found {}",
            describe_cap(cap)
        ),
    }
}

fn describe_cap(cap: &Cap) -> String {
    format!(
        "within upstream's {} evictions and {} duplicates excess{}",
        cap.moves,
        cap.duplicates_excess,
        if cap.spread {
            ", every hard spread kept"
        } else {
            ""
        }
    )
}

fn within_line(best: &Bound, cap: &Cap, within: &Bound) -> String {
    let verdict = match best.conflicts_with(within) {
        Some(true) => format!(
            "the targets conflict on this start state: within upstream's figures no plan comes within one node of the best possible's {}",
            if best.optimal {
                format!("{:.0} outside", best.outside)
            } else {
                format!(
                    "at most {:.0} outside (its integer incumbent)",
                    best.incumbent_outside.unwrap_or(f64::NAN)
                )
            }
        ),
        Some(false) => "the targets can all be met from this start state".to_string(),
        None => "not decided".to_string(),
    };
    format!("{}: {}; {verdict}", describe_cap(cap), bound_cell(within))
}

async fn run_one(
    cluster: &Cluster,
    scenario: Scenario,
    seed: u64,
    binary: Binary,
    cfg: &RunConfig,
) -> Row {
    let client = cluster.client();
    let result = AssertUnwindSafe(async {
        let built = scenario.build(&client, seed).await;
        let outcome = run(cluster, &built, binary, cfg).await;
        discard(&client, &built).await;
        (built, outcome)
    })
    .catch_unwind()
    .await;
    match result {
        Ok((built, o)) => Row {
            scenario,
            seed,
            binary,
            summary: built.summary.clone(),
            pods: built.pods(),
            result: Ok(o),
            within: None,
            witness: None,
        },
        Err(e) => Row {
            scenario,
            seed,
            binary,
            summary: String::new(),
            pods: 0,
            result: Err(panic_message(&*e)),
            within: None,
            witness: None,
        },
    }
}

fn bound_cell(b: &Bound) -> String {
    if b.moves.is_nan() {
        return format!("none ({})", b.note);
    }
    if b.relaxed {
        format!(
            ">= {:.1} moves (LP, {}), {:.1} outside",
            b.moves, b.solver, b.outside
        )
    } else if b.optimal {
        format!(
            "{:.0} moves, {:.0} outside (proven by {})",
            b.moves, b.outside, b.solver
        )
    } else {
        format!(
            "{:.0} moves, {:.0} outside (not proven)",
            b.moves, b.outside
        )
    }
}

const HEADER: &str = "| seed | binary | evictions (per cycle) | churn | pending left | PDB overruns | outside start → end (of N) | cpu sd start → end | mem sd start → end | spread excess start → end | duplicates excess start → end | cycles to settle |";

fn table_row(r: &Row) -> String {
    match &r.result {
        Ok(o) => format!(
            "| {} | {} | {} ({}) | {} | {} | {} | {} → {} (of {}) | {:.1} → {:.1} | {:.1} → {:.1} | {} → {} | {} → {} | {} |",
            r.seed,
            r.binary.name(),
            o.evictions,
            o.cycles
                .iter()
                .map(|c| c.evictions.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            o.churn,
            o.pending,
            o.pdb_overruns,
            o.start.outside,
            o.end.outside,
            o.end.nodes,
            o.start.cpu_sd,
            o.end.cpu_sd,
            o.start.memory_sd,
            o.end.memory_sd,
            o.start.spread_excess,
            o.end.spread_excess,
            o.start.duplicates_excess,
            o.end.duplicates_excess,
            o.settle
        ),
        Err(e) => format!(
            "| {} | {} | FAILED: {} |",
            r.seed,
            r.binary.name(),
            e.lines().next().unwrap_or("?")
        ),
    }
}

fn row_json(r: &Row) -> serde_json::Value {
    let mut v = serde_json::json!({
        "scenario": r.scenario.name(), "seed": r.seed, "binary": r.binary.name(),
        "state": r.summary, "pods": r.pods,
    });
    match &r.result {
        Ok(o) => {
            let fig = |f: &support::outcome::Figures| {
                serde_json::json!({
                    "nodes": f.nodes, "outside": f.outside, "over": f.over, "under": f.under,
                    "cpuStddev": f.cpu_sd, "memoryStddev": f.memory_sd,
                    "spreadExcess": f.spread_excess, "duplicatesExcess": f.duplicates_excess,
                    "pending": f.pending,
                })
            };
            v["start"] = fig(&o.start);
            v["end"] = fig(&o.end);
            v["evictions"] = o.evictions.into();
            v["churn"] = o.churn.into();
            v["pendingLeft"] = o.pending.into();
            v["pdbOverruns"] = o.pdb_overruns.into();
            v["cyclesToSettle"] = o.settle.into();
            v["cycles"] = o
                .cycles
                .iter()
                .map(|c| {
                    serde_json::json!({"evictions": c.evictions, "reevicted": c.reevicted, "home": c.home})
                })
                .collect::<Vec<_>>()
                .into();
            v["bound"] = serde_json::json!({
                "moves": o.bound.moves, "outside": o.bound.outside, "optimal": o.bound.optimal,
                "relaxed": o.bound.relaxed, "seconds": o.bound.seconds, "note": o.bound.note,
                "solver": o.bound.solver,
            });
            if let Some((cap, w)) = &r.within {
                v["boundWithinUpstream"] = serde_json::json!({
                    "moves": w.moves, "outside": w.outside, "optimal": w.optimal,
                    "relaxed": w.relaxed, "seconds": w.seconds, "note": w.note,
                    "solver": w.solver,
                    "cap": {"moves": cap.moves, "duplicatesExcess": cap.duplicates_excess, "spread": cap.spread},
                    "targetsConflict": o.bound.conflicts_with(w),
                });
                if let Some(found) = &r.witness {
                    v["schedulerPlacedWithinUpstream"] = match found {
                        Some(w) => serde_json::json!({
                            "moves": w.moves, "outside": w.outside,
                            "duplicatesExcess": w.duplicates_excess, "sequences": w.sequences,
                            "seconds": w.seconds, "plan": w.plan,
                        }),
                        None => serde_json::Value::Null,
                    };
                }
            }
            v["notes"] = o.notes.clone().into();
            v["seconds"] = o.seconds.into();
        }
        Err(e) => v["failure"] = e.clone().into(),
    }
    v
}

fn main() {
    let mut seeds = None;
    let mut json = None;
    let mut binaries = vec![Binary::Ours, Binary::Upstream];
    let mut families: Option<Vec<Scenario>> = None;
    let mut cfg = RunConfig::default();
    let mut witness_dir = None;
    let mut replay_dir = None;
    let mut replay_binary = Binary::OursOutcome;
    let mut outcome_args: Vec<String> = Vec::new();
    let mut family = None;
    let mut witness_seed = None;
    let mut sequences = WITNESS_SEQUENCES;
    let mut cap = Cap {
        moves: f64::NAN,
        duplicates_excess: 0.0,
        spread: false,
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--seeds" => seeds = Some(parse_seeds(&value())),
            "--witness" => witness_dir = Some(value()),
            "--replay" => replay_dir = Some(value()),
            "--outcome-arg" => outcome_args.push(value()),
            "--binary" => {
                replay_binary = match value().as_str() {
                    "ours" => Binary::Ours,
                    "ours-outcome" => Binary::OursOutcome,
                    _ => usage(),
                }
            }
            "--family" => family = Some(Scenario::parse(&value()).unwrap_or_else(|| usage())),
            "--seed" => witness_seed = Some(value().parse().unwrap_or_else(|_| usage())),
            "--cap-evictions" => cap.moves = value().parse().unwrap_or_else(|_| usage()),
            "--cap-duplicates" => {
                cap.duplicates_excess = value().parse().unwrap_or_else(|_| usage())
            }
            "--cap-spread" => cap.spread = true,
            "--sequences" => sequences = value().parse().unwrap_or_else(|_| usage()),
            "--json" => json = Some(value()),
            "--cycles" => cfg.cycles = value().parse().unwrap_or_else(|_| usage()),
            "--interval" => cfg.interval = parse_duration(&value()),
            "--cooldown" => cfg.cooldown = Some(value()),
            "--await-placement" => cfg.await_placement = true,
            "--ilp-seconds" => cfg.ilp_seconds = value().parse().unwrap_or_else(|_| usage()),
            "--only" => {
                binaries = match value().as_str() {
                    "ours" => vec![Binary::Ours],
                    "ours-outcome" => vec![Binary::OursOutcome],
                    "upstream" => vec![Binary::Upstream],
                    "all" => vec![Binary::Ours, Binary::OursOutcome, Binary::Upstream],
                    _ => usage(),
                }
            }
            "--families" => {
                let v = value();
                families = Some(if v == "all" {
                    Scenario::ALL.to_vec()
                } else {
                    v.split(',')
                        .map(|n| Scenario::parse(n).unwrap_or_else(|| usage()))
                        .collect()
                })
            }
            _ => usage(),
        }
    }
    if let Some(dir) = replay_dir {
        let (Some(scenario), Some(seed)) = (family, witness_seed) else {
            usage()
        };
        replay_of(&dir, scenario, seed, replay_binary, &cfg, &outcome_args);
        return;
    }
    if let Some(dir) = witness_dir {
        let (Some(scenario), Some(seed), false) = (family, witness_seed, cap.moves.is_nan()) else {
            usage()
        };
        witness_of(&dir, scenario, seed, cap, cfg.cycles, sequences);
        return;
    }
    let seeds = seeds.unwrap_or_else(|| parse_seeds("1-6"));
    let cluster = Cluster::start(Components::realistic());
    eprintln!("control plane ready in {:.1?}", cluster.startup_time());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    println!(
        "{} cycles of {:?} each; our cooldown {}{}; integer program bounded to {} s",
        cfg.cycles,
        cfg.interval,
        cfg.cooldown.as_deref().unwrap_or("default (10m)"),
        if cfg.await_placement {
            "; ours with --await-placement"
        } else {
            ""
        },
        cfg.ilp_seconds
    );
    let mut rows: Vec<Row> = Vec::new();
    for seed in seeds {
        let scenarios = families.clone().unwrap_or_else(|| vec![Scenario::of(seed)]);
        for scenario in scenarios {
            let mut these = Vec::new();
            for binary in &binaries {
                let row = runtime.block_on(run_one(&cluster, scenario, seed, *binary, &cfg));
                eprintln!("{}: {}", scenario.name(), table_row(&row));
                if let Ok(o) = &row.result {
                    eprintln!("    state: {}", row.summary);
                    eprintln!("    start: {}", o.bound.describe());
                    for n in &o.notes {
                        eprintln!("    note: {n}");
                    }
                }
                these.push(row);
            }
            within_upstream(&mut these, cfg.ilp_seconds, cfg.cycles);
            for r in &these {
                if let (Ok(o), Some((cap, w))) = (&r.result, &r.within) {
                    eprintln!(
                        "    {} start: {}",
                        r.binary.name(),
                        within_line(&o.bound, cap, w)
                    );
                    if let Some(found) = &r.witness {
                        eprintln!(
                            "    {} start: {}",
                            r.binary.name(),
                            witness_line(cap, found.as_ref())
                        );
                    }
                }
            }
            rows.extend(these);
        }
    }
    cluster.assert_running();

    let mut by_family: BTreeMap<Scenario, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_family.entry(r.scenario).or_default().push(r);
    }
    for (scenario, rs) in &by_family {
        println!();
        println!("## {}", scenario.name());
        println!();
        println!("{HEADER}");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for r in rs {
            println!("{}", table_row(r));
        }
        for r in rs {
            if let Ok(o) = &r.result {
                println!(
                    "| {} | best possible from {}'s start | {} | | | | {} | | | 0 | 0 | |",
                    r.seed,
                    r.binary.name(),
                    bound_cell(&o.bound),
                    if o.bound.moves.is_nan() {
                        "-".to_string()
                    } else {
                        format!("{:.0}", o.bound.outside)
                    }
                );
            }
        }
        for r in rs {
            if let Some((cap, w)) = &r.within {
                println!(
                    "| {} | best within upstream's {} evictions from {}'s start | {} | | | | {} | | | | ≤ {} | |",
                    r.seed,
                    cap.moves,
                    r.binary.name(),
                    bound_cell(w),
                    if w.outside.is_nan() {
                        "-".to_string()
                    } else {
                        format!("{:.0}", w.outside)
                    },
                    cap.duplicates_excess
                );
            }
        }
        for r in rs {
            if let (Some((cap, _)), Some(Some(w))) = (&r.within, &r.witness) {
                println!(
                    "| {} | best plan kube-scheduler carries out found within upstream's {} evictions from {}'s start | {} moves | | | | {} | | | | {} | |",
                    r.seed,
                    cap.moves,
                    r.binary.name(),
                    w.moves,
                    w.outside,
                    w.duplicates_excess
                );
            }
        }
        println!();
        for r in rs {
            println!("- seed {} {}: {}", r.seed, r.binary.name(), r.summary);
            if let Ok(o) = &r.result {
                println!("  - start: {}", o.bound.describe());
                if let Some((cap, w)) = &r.within {
                    println!("  - {}", within_line(&o.bound, cap, w));
                    if let Some(found) = &r.witness {
                        println!("  - {}", witness_line(cap, found.as_ref()));
                        for m in found.iter().flat_map(|w| &w.plan) {
                            println!("    - {m}");
                        }
                    }
                }
                for c in o
                    .cycles
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.reevicted + c.home > 0)
                {
                    println!(
                        "  - cycle {}: {} evictions, {} of replacements, {} back home",
                        c.0 + 1,
                        c.1.evictions,
                        c.1.reevicted,
                        c.1.home
                    );
                }
                for n in &o.notes {
                    println!("  - note: {n}");
                }
            }
        }
    }
    if let Some(path) = json {
        let out = serde_json::json!({
            "cycles": cfg.cycles, "intervalSeconds": cfg.interval.as_secs_f64(),
            "cooldown": cfg.cooldown, "awaitPlacement": cfg.await_placement, "runs": rows.iter().map(row_json).collect::<Vec<_>>(),
        });
        std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap())
            .unwrap_or_else(|e| panic!("writing {path}: {e}"));
        eprintln!("wrote {path}");
    }
}
