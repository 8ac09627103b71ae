//! Planning cycle after cycle without a cluster: each cycle plans on the cluster the last one
//! left, as kubectl would list it then (every evicted pod gone, its replacement bound to the
//! node the plan predicted), with the run's memory kept as a continuous run keeps it.
//!
//! The replacements are Running and Ready by the next cycle, and every PodDisruptionBudget's
//! status stays as the start state lists it: each cycle gets the budgets back, as on a
//! cluster where the replacements are Ready between two cycles.

use descheduler::framework::{History, Overutilized, Pipeline};
use descheduler::plan::{plan_with, CycleMemory, EvictionPlan};
use descheduler::snapshot::ClusterSnapshot;
use std::collections::{HashMap, HashSet};
use std::io::Read as _;
use std::path::Path;

/// A cluster as kubectl lists it (`kind: List`), read from a file (gzip-compressed where its
/// name ends in `.gz`).
pub fn load_list(path: &Path) -> Result<serde_json::Value, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = if path.extension().is_some_and(|e| e == "gz") {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        out
    } else {
        bytes
    };
    serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The cluster a plan leaves for the next cycle, as kubectl would list it then: each evicted
/// pod gone, its replacement (a copy named `<pod>-c<cycle>r<k>`, created at `created`) bound
/// to the node the plan predicted, Pending where it predicted none.
pub fn next_cycle(
    items: &mut Vec<serde_json::Value>,
    snap: &ClusterSnapshot,
    plan: &EvictionPlan,
    cycle: usize,
    created: &str,
) {
    let at: HashMap<String, usize> = items
        .iter()
        .enumerate()
        .filter(|(_, it)| it["kind"] == "Pod")
        .map(|(i, it)| {
            let m = &it["metadata"];
            let ns = m["namespace"].as_str().unwrap_or("default");
            (
                format!("{ns}/{}", m["name"].as_str().unwrap_or_default()),
                i,
            )
        })
        .collect();
    let mut gone = HashSet::new();
    let mut replacements = Vec::new();
    for (k, e) in plan.evictions.iter().enumerate() {
        let i = at[&snap.pod(e.pod).key().to_string()];
        gone.insert(i);
        let mut pod = items[i].clone();
        let name = format!("{}-c{cycle}r{k}", pod["metadata"]["name"].as_str().unwrap());
        pod["metadata"]["name"] = name.clone().into();
        pod["metadata"]["uid"] = format!("uid-{name}").into();
        pod["metadata"]["creationTimestamp"] = created.into();
        pod["status"]["startTime"] = created.into();
        match e.destination {
            Some(d) => pod["spec"]["nodeName"] = snap.node(d).name.to_string().into(),
            None => {
                pod["spec"].as_object_mut().unwrap().remove("nodeName");
                pod["status"] = serde_json::json!({"phase": "Pending"});
            }
        }
        replacements.push(pod);
    }
    let mut i = 0;
    items.retain(|_| {
        i += 1;
        !gone.contains(&(i - 1))
    });
    items.extend(replacements);
}

/// Whether the pod is a replacement an earlier cycle of [`next_cycle`] created.
pub fn is_replacement(name: &str) -> bool {
    name.rsplit_once("-c")
        .and_then(|(_, tail)| tail.split_once('r'))
        .is_some_and(|(c, k)| c.parse::<usize>().is_ok() && k.parse::<usize>().is_ok())
}

/// RFC 3339, to the second, of a Unix time.
fn rfc3339(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .expect("a time in range")
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Plans `cycles` cycles in a row from `list` (a `kind: List`), `interval` seconds apart
/// from `start`, each on the cluster the last one left (the replacements created half an
/// interval into the cycle), with the memory of a continuous run whose eviction cooldown is
/// `cooldown` seconds (0: none). Calls `each(cycle, snapshot, plan)` for every cycle (from 0)
/// and returns the cluster the last one left.
pub fn replay(
    mut list: serde_json::Value,
    pipeline: &Pipeline,
    start: i64,
    interval: i64,
    cycles: usize,
    cooldown: i64,
    mut each: impl FnMut(usize, &ClusterSnapshot, &EvictionPlan),
) -> ClusterSnapshot {
    let mut items = std::mem::take(list["items"].as_array_mut().expect("a List's items"));
    let mut history = History::with_cooldown(cooldown);
    let load = |list: &serde_json::Value| {
        descheduler::snapshot::decode::load_bytes("cluster.json", list.to_string().as_bytes())
            .expect("the cluster a plan left loads")
    };
    for cycle in 0..cycles {
        list["items"] = items.clone().into();
        let snap = load(&list);
        let now = start + interval * cycle as i64;
        history = history.observe(&snap, now);
        let plan = plan_with(
            pipeline,
            &snap,
            now,
            &CycleMemory::new(history.clone()),
            &mut (),
        )
        .expect("plans");
        each(cycle, &snap, &plan);
        let evicted: Vec<_> = plan.evictions.iter().map(|e| e.pod).collect();
        history = history
            .advance(Overutilized::of(&plan.findings))
            .record_evictions(&snap, &evicted, now);
        next_cycle(
            &mut items,
            &snap,
            &plan,
            cycle,
            &rfc3339(now + interval / 2),
        );
    }
    list["items"] = items.into();
    load(&list)
}
