//! Writes a synthetic cluster snapshot (a `kind: List` JSON document) to stdout.
//!
//! `cargo run --release --example gen_cluster -- --nodes 5000 --pods 150000 --seed 1 > big.json`
//!
//! `--full-percent` sets the share of pods written with every field a live pod has (the
//! rest carry what matters; default 5). 5,000 nodes and 150,000 pods make about 168 MB;
//! `--pods 84000` makes about 100 MB. `--namespaces N` puts the workloads in N namespaces
//! (default: one per 750 pods, between 3 and 400); `--namespaces 1` makes one namespace of
//! them all, as many batch and AI clusters have.

use descheduler::snapshot::synthetic::{write_list, Config};
use std::process::ExitCode;

const USAGE: &str =
    "usage: gen_cluster [--nodes N] [--pods N] [--seed N] [--full-percent 0-100] [--namespaces N] > cluster.json";

fn main() -> ExitCode {
    let mut cfg = Config::new(5000, 150_000, 1);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        let value = args.next().and_then(|v| v.parse::<u64>().ok());
        match (flag.as_str(), value) {
            ("--nodes", Some(v)) => cfg.nodes = v as usize,
            ("--pods", Some(v)) => cfg.pods = v as usize,
            ("--seed", Some(v)) => cfg.seed = v,
            ("--full-percent", Some(v)) if v <= 100 => cfg.full_percent = v as u8,
            ("--namespaces", Some(v)) if v >= 1 => cfg.namespaces = Some(v as usize),
            _ => {
                eprintln!("gen_cluster: bad argument {flag:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let stdout = std::io::stdout().lock();
    if let Err(e) = write_list(&cfg, stdout) {
        eprintln!("gen_cluster: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
