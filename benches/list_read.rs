//! The live path's list reader alone, on a list response saved to a file: how much CPU it
//! takes to turn the API's bytes (protobuf or JSON) into the compact model, without the
//! network, TLS or the API server in the way.
//!
//! Save a response once (from a cluster `benches/live/run --load-only` loaded; the
//! kubeconfig's client certificate and key written to files):
//!
//! ```text
//! curl -sk --cert client.crt --key client.key \
//!   -H 'Accept: application/vnd.kubernetes.protobuf' \
//!   https://127.0.0.1:PORT/api/v1/pods -o pods.pb
//! ```
//!
//! then `cargo bench --bench list_read -- pods.pb [Pod|Node] [frame KiB]`. The file is cut
//! into frames of the given size (default 16 KiB, what the HTTP layer hands over) and pushed
//! through the same reader live mode uses, chosen by the bytes' encoding; each run prints
//! its time, and the median of five runs ends the output. Under `perf record` it shows where
//! the reader's CPU goes.

use descheduler::snapshot::decode::proto;
use descheduler::snapshot::decode::stream::{ListReader, ObjectType};
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // `cargo bench` adds `--bench`; every other argument is ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let Some(path) = args.first() else {
        eprintln!("usage: cargo bench --bench list_read -- FILE [Pod|Node] [frame KiB]");
        std::process::exit(2);
    };
    let kind: &'static str = match args.get(1).map(String::as_str) {
        None | Some("Pod") => "Pod",
        Some("Node") => "Node",
        Some(other) => {
            eprintln!("list_read: the kind is Pod or Node, not {other:?}");
            std::process::exit(2);
        }
    };
    let frame = args
        .get(2)
        .map(|k| {
            k.parse::<usize>()
                .expect("the frame size is a number of KiB")
        })
        .unwrap_or(16)
        .max(1)
        << 10;
    let bytes = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("list_read: {path}: {e}");
        std::process::exit(1);
    });
    let content_type = if bytes.starts_with(b"k8s\0") {
        proto::MEDIA_TYPE
    } else {
        "application/json"
    };
    let object = ObjectType {
        kind,
        api_version: "v1",
    };
    let mut times = Vec::new();
    for run in 1..=5 {
        let start = Instant::now();
        let mut reader = ListReader::new(path.clone(), object, content_type);
        for piece in bytes.chunks(frame) {
            reader.push(piece).unwrap_or_else(|e| panic!("{e}"));
        }
        let list = reader.finish().unwrap_or_else(|e| panic!("{e}"));
        let took = start.elapsed();
        println!(
            "run {run}: {} bytes ({content_type}), {} pods, {} nodes in {:.3} s",
            bytes.len(),
            list.parts.pods.len(),
            list.parts.nodes.len(),
            took.as_secs_f64()
        );
        times.push(took.as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!("median {:.3} s", times[times.len() / 2]);
}
