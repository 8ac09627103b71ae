//! The live executor: attempts a plan through the Eviction API (policy/v1), safely.
//!
//! - Each pod is re-checked just before its call: it still exists, has the same UID, is on
//!   the same node and is not terminating or finished.
//! - The call carries the policy's gracePeriodSeconds, a UID precondition, and annotations
//!   saying why and by whom.
//! - HTTP 429 (a disruption budget allows nothing now) is recorded as blocked and never
//!   retried in the cycle; 500 for several budgets, 404 (gone) and 409 (UID changed) are
//!   recorded as such.
//! - A refused eviction frees its place in the limits: the pod is pinned and the rest of the
//!   cycle is re-planned from the new state (pods evicted so far count as gone).
//! - A gang evicted whole (`gangPolicy: WholeGang`) is all or nothing: every member is first
//!   asked with `dryRun=All` (the API server checks the pod and its budget, evicts nothing);
//!   one refusal and no member is evicted. Should a real call still be refused (a budget
//!   changed between the two calls), the members after it are not attempted, and the
//!   re-plan never takes up the rest of that gang.
//! - A global and a per-node rate limit pace the calls; a closed gate (shutdown, lost
//!   leadership) stops before the next call, never in the middle of one.
//! - With `--await-placement` (a closed loop), after each eviction the executor waits, for a
//!   bounded time, until the pod's replacement (a new pod of the same controller) is bound,
//!   compares its node with the prediction (metrics, and an event on the replacement when it
//!   landed elsewhere), and re-plans the rest of the cycle with the replacement where it
//!   really is. A replacement back on its source node, or on a node the plan counts as
//!   overutilized, stops that workload for the cycle (the cooldown then keeps it still in the
//!   next cycles).

use super::client::ApiClient;
use crate::framework::{History, Ledger, Limits, Pipeline, PlannedEviction};
use crate::metrics::Metrics;
use crate::outcome::Outcome;
use crate::plan::{
    plan_with, AfterState, CycleMemory, EvictionPlan, Landing, PlanError, PlanObserver,
};
use crate::report::Report;
use crate::snapshot::{ClusterSnapshot, NodeId};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, ListParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const ANNOTATION_REASON: &str = "descheduler.alpha.kubernetes.io/reason";
pub const ANNOTATION_PLUGIN: &str = "descheduler.alpha.kubernetes.io/plugin";
pub const ANNOTATION_PROFILE: &str = "descheduler.alpha.kubernetes.io/profile";
pub const ANNOTATION_EVICTED_BY: &str = "descheduler.alpha.kubernetes.io/evicted-by";
pub const REPORTING_CONTROLLER: &str = "descheduler";

/// Whether evictions may go on: closed on shutdown or when leadership is lost.
#[derive(Clone, Debug)]
pub struct Gate {
    shutdown: Arc<AtomicBool>,
    leading: Arc<AtomicBool>,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            shutdown: Arc::new(AtomicBool::new(false)),
            leading: Arc::new(AtomicBool::new(true)),
        }
    }
}

impl Gate {
    pub fn new(shutdown: Arc<AtomicBool>, leading: Arc<AtomicBool>) -> Self {
        Gate { shutdown, leading }
    }
    pub fn open(&self) -> bool {
        !self.shutdown.load(Ordering::SeqCst) && self.leading.load(Ordering::SeqCst)
    }
    pub fn shutting_down(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }
}

#[derive(Debug, Clone, Default)]
pub struct ExecutorConfig {
    pub grace_period_seconds: Option<i64>,
    /// Also publish events when an eviction fails (the policy's
    /// evictionFailureEventNotification).
    pub failure_events: bool,
    pub global_rate: Option<Quota>,
    pub node_rate: Option<Quota>,
    /// This instance's name in events.
    pub instance: Option<String>,
    /// `--await-placement`: how long to wait for each evicted pod's replacement to be bound
    /// (None: do not wait).
    pub await_placement: Option<Duration>,
}

pub struct LiveExecutor {
    api: ApiClient,
    config: ExecutorConfig,
    metrics: Metrics,
    recorder: Recorder,
    global: Option<DefaultDirectRateLimiter>,
    per_node: Option<DefaultKeyedRateLimiter<String>>,
    gate: Gate,
}

/// One cycle's result: what was attempted and what happened.
pub struct CycleResult {
    pub report: Report,
    pub outcomes: Vec<Outcome>,
    /// Nodes each plugin found overutilized, for the next cycle's history.
    pub over: std::collections::BTreeMap<String, Vec<String>>,
    /// The pods evicted (accepted by the API), for the next cycle's history.
    pub evicted: Vec<crate::snapshot::PodId>,
    /// Why the cycle stopped before its plan's end, when the API kept failing.
    pub stopped: Option<String>,
}

/// Whether a replacement's landing stops its workload for the cycle, and why: back on its
/// source node, or on a node a plugin of the plan counts as overutilized (`over`, node names
/// by `profile/plugin`), where moving more of it would feed a ping-pong.
pub fn stops_workload(
    e: &PlannedEviction,
    landed: crate::snapshot::NodeId,
    landed_name: &str,
    over: &std::collections::BTreeMap<String, Vec<String>>,
) -> Option<&'static str> {
    if landed == e.node {
        Some("back on its source node")
    } else if over
        .values()
        .any(|nodes| nodes.iter().any(|n| n == landed_name))
    {
        Some("on a node the plan counts as overutilized")
    } else {
        None
    }
}

/// Where an awaited replacement landed, against the prediction.
pub fn placement_result(e: &PlannedEviction, landed: crate::snapshot::NodeId) -> &'static str {
    if e.destination == Some(landed) {
        "exact"
    } else if e.alternatives.contains(&landed) {
        "alternative"
    } else {
        "missed"
    }
}

/// Consecutive failed calls (the API unreachable, or answering errors that are not about the
/// pod) after which a cycle stops instead of re-planning once per remaining pod.
pub const MAX_CONSECUTIVE_FAILURES: usize = 3;

impl LiveExecutor {
    pub fn new(api: ApiClient, config: ExecutorConfig, metrics: Metrics, gate: Gate) -> Self {
        let recorder = Recorder::new(
            api.client.clone(),
            Reporter {
                controller: REPORTING_CONTROLLER.into(),
                instance: config.instance.clone(),
            },
        );
        LiveExecutor {
            global: config.global_rate.map(RateLimiter::direct),
            per_node: config.node_rate.map(RateLimiter::keyed),
            api,
            config,
            metrics,
            recorder,
            gate,
        }
    }

    /// Plans and executes one cycle, re-planning after each refusal.
    pub async fn run_cycle(
        &self,
        pipeline: &Pipeline,
        snap: &ClusterSnapshot,
        now: i64,
        history: &History,
        observer: &mut dyn PlanObserver,
    ) -> Result<CycleResult, PlanError> {
        let mut memory = CycleMemory {
            history: history.clone(),
            ..CycleMemory::default()
        };
        let mut attempted: Vec<(PlannedEviction, Outcome)> = Vec::new();
        // With --await-placement: where each awaited replacement landed, by attempt.
        let mut landings: Vec<(usize, String)> = Vec::new();
        let mut claimed: std::collections::BTreeSet<String> = Default::default();
        let mut failures = 0;
        let mut stopped = None;
        let mut last_plan: EvictionPlan;
        'replan: loop {
            last_plan = plan_with(pipeline, snap, now, &memory, observer)?;
            let evictions = &last_plan.evictions;
            let mut i = 0;
            while i < evictions.len() {
                // A whole gang's members follow one another in the plan: all or none.
                let end = match evictions[i].gang {
                    Some(g) => {
                        i + evictions[i..]
                            .iter()
                            .take_while(|x| x.gang == Some(g))
                            .count()
                    }
                    None => i + 1,
                };
                let group = &evictions[i..end];
                i = end;
                if group[0].gang.is_some() {
                    // Asked first with dryRun=All: the API checks each member (and its
                    // disruption budget) without evicting; one refusal and none is evicted.
                    for (k, e) in group.iter().enumerate() {
                        let outcome = self.evict(snap, e, true).await;
                        if outcome != Outcome::Evicted {
                            self.record(snap, e, outcome).await;
                            for (j, m) in group.iter().enumerate() {
                                let o = if j == k {
                                    outcome
                                } else {
                                    Outcome::GangNotAttempted
                                };
                                attempted.push((m.clone(), o));
                            }
                            tracing::warn!(pod = %snap.pod(e.pod).key(), result = outcome.as_str(), "a member of a whole gang would be refused: no member is evicted");
                            memory.refused.push(e.pod);
                            continue 'replan;
                        }
                    }
                }
                for (k, e) in group.iter().enumerate() {
                    if !self.gate.open()
                        || !self.wait_for_rate_limits(&snap.node(e.node).name).await
                    {
                        tracing::warn!(pod = %snap.pod(e.pod).key(), "not attempted: shutting down or leadership lost");
                        attempted.push((e.clone(), Outcome::NotAttempted));
                        break 'replan;
                    }
                    let outcome = self.evict(snap, e, false).await;
                    self.record(snap, e, outcome).await;
                    attempted.push((e.clone(), outcome));
                    failures = if outcome == Outcome::Failed {
                        failures + 1
                    } else {
                        0
                    };
                    if failures >= MAX_CONSECUTIVE_FAILURES {
                        let why = format!("{failures} eviction calls in a row failed (API server unreachable or erring); the rest of this cycle's plan is not attempted");
                        tracing::error!("{why}");
                        stopped = Some(why);
                        break 'replan;
                    }
                    if outcome == Outcome::Evicted {
                        memory.evicted.push(e.pod);
                        if let (Some(timeout), None) = (self.config.await_placement, e.gang) {
                            let seen = self.await_replacement(snap, e, timeout, &mut claimed).await;
                            if let Some((name, replacement)) = seen {
                                landings.push((attempted.len() - 1, name.clone()));
                                if let Some(landed) = snap.node_id(&name) {
                                    self.compare(snap, e, landed, &replacement).await;
                                    memory.landed.push((e.pod, landed));
                                    if let Some(why) =
                                        stops_workload(e, landed, &name, &last_plan.over)
                                    {
                                        let pod = snap.pod(e.pod);
                                        tracing::warn!(pod = %pod.key(), node = %name, "the replacement landed {why}: its workload is not moved again this cycle");
                                        if let Some(owner) =
                                            pod.owners.iter().find(|o| o.controller)
                                        {
                                            memory.refused.extend(
                                                snap.pods_in_namespace(&pod.namespace).filter(
                                                    |&q| {
                                                        snap.pod(q).owners.iter().any(|o| {
                                                            o.controller && o.uid == owner.uid
                                                        })
                                                    },
                                                ),
                                            );
                                        }
                                    }
                                }
                                // The rest of the cycle is planned from where it really landed,
                                // with the evicted pods whose termination is over gone.
                                self.note_terminated(snap, &mut memory).await;
                                continue 'replan;
                            }
                        }
                    } else {
                        // The rest of a gang is never attempted after a refusal.
                        for m in &group[k + 1..] {
                            attempted.push((m.clone(), Outcome::GangNotAttempted));
                        }
                        memory.refused.push(e.pod);
                        continue 'replan;
                    }
                }
            }
            break;
        }
        // The report: every attempt with its result, and the nodes as the evictions left them.
        let mut after = Ledger::new(snap, Limits::default());
        for p in &memory.evicted {
            after.record_evicted_earlier(*p);
        }
        let (_, evicted_after) = after.into_parts();
        // Replacements of the pods evicted: where they were seen bound (`--await-placement`),
        // else where they are predicted; and the pending pods once all their moves happened.
        let landed_at: Vec<Option<NodeId>> = attempted
            .iter()
            .enumerate()
            .map(|(i, _)| {
                landings
                    .iter()
                    .find(|(j, _)| *j == i)
                    .and_then(|(_, name)| snap.node_id(name))
            })
            .collect();
        let replacements = attempted
            .iter()
            .zip(&landed_at)
            .filter(|((_, o), _)| matches!(o, Outcome::Evicted))
            .filter_map(|((e, _), landed)| {
                Some(Landing {
                    requests: &snap.pod(e.pod).requests,
                    node: landed.or(e.destination)?,
                    alternatives: if landed.is_some() {
                        &[]
                    } else {
                        &e.alternatives
                    },
                })
            });
        let placed = last_plan
            .pending
            .iter()
            .filter(|u| u.made_room_by.iter().all(|p| memory.evicted.contains(p)))
            .flat_map(|u| {
                u.pods.iter().zip(&u.destinations).filter_map(|(&p, d)| {
                    Some(Landing {
                        requests: &snap.pod(p).requests,
                        node: (*d)?,
                        alternatives: &[],
                    })
                })
            });
        let requested_after = AfterState::new(evicted_after, replacements.chain(placed));
        let over = last_plan.over;
        let plan = EvictionPlan {
            // The tenants' shares as the last plan left them (after the earlier evictions).
            tenants: last_plan.tenants,
            pending: last_plan.pending,
            evictions: attempted.iter().map(|(e, _)| e.clone()).collect(),
            nodes: last_plan.nodes,
            requested_after,
            notes: last_plan.notes,
            measured: last_plan.measured,
            over: Default::default(),
            targets: last_plan.targets,
        };
        let mut report = Report::new(snap, &plan);
        // A replacement that landed elsewhere than predicted and put its node over a target:
        // said in the report, not only in the log.
        let landed: Vec<(usize, NodeId)> = landed_at
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.map(|n| (i, n)))
            .collect();
        for (i, message) in plan.landing_misses(snap, &landed) {
            let e = &plan.evictions[i];
            let node = landed.iter().find(|(j, _)| *j == i).map(|&(_, n)| n);
            tracing::warn!(pod = %snap.pod(e.pod).key(), "{message}");
            report.notes.push(crate::report::NoteRow {
                profile: e.profile.clone(),
                plugin: e.plugin.to_string(),
                node: node.map(|n| snap.node(n).name.to_string()),
                message,
                skipped: false,
            });
        }
        for (row, (_, outcome)) in report.evictions.iter_mut().zip(&attempted) {
            row.result = Some(outcome.as_str().to_string());
        }
        for (i, node) in landings {
            report.evictions[i].landed = Some(node);
        }
        Ok(CycleResult {
            report,
            outcomes: attempted.into_iter().map(|(_, o)| o).collect(),
            over,
            evicted: memory.evicted,
            stopped,
        })
    }

    /// Waits for the global and the node's rate limit; false if the gate closes meanwhile.
    async fn wait_for_rate_limits(&self, node: &str) -> bool {
        let tick = Duration::from_millis(100);
        if let Some(g) = &self.global {
            loop {
                if !self.gate.open() {
                    return false;
                }
                if tokio::time::timeout(tick, g.until_ready()).await.is_ok() {
                    break;
                }
            }
        }
        if let Some(k) = &self.per_node {
            let key = node.to_string();
            loop {
                if !self.gate.open() {
                    return false;
                }
                if tokio::time::timeout(tick, k.until_key_ready(&key))
                    .await
                    .is_ok()
                {
                    break;
                }
            }
        }
        self.gate.open()
    }

    /// Re-checks the pod and calls the Eviction API; with `dry_run`, as `dryRun=All`: the API
    /// server checks everything (the pod, its disruption budget) and evicts nothing.
    async fn evict(&self, snap: &ClusterSnapshot, e: &PlannedEviction, dry_run: bool) -> Outcome {
        let pod = snap.pod(e.pod);
        let node = &snap.node(e.node).name;
        let pods: Api<Pod> = Api::namespaced(self.api.client.clone(), &pod.namespace);
        // Re-check just before the call.
        self.api.throttle().await;
        match pods.get_opt(&pod.name).await {
            Ok(None) => return Outcome::PodGone,
            Ok(Some(current)) => {
                if current.metadata.uid.as_deref() != Some(&*pod.uid) {
                    return Outcome::UidChanged;
                }
                if current.metadata.deletion_timestamp.is_some() {
                    return Outcome::NoLongerEvictable;
                }
                let spec_node = current.spec.as_ref().and_then(|s| s.node_name.as_deref());
                if spec_node != Some(&**node) {
                    return Outcome::NoLongerEvictable;
                }
                let phase = current.status.as_ref().and_then(|s| s.phase.as_deref());
                if matches!(phase, Some("Succeeded") | Some("Failed")) && pod.is_active() {
                    return Outcome::NoLongerEvictable;
                }
            }
            Err(err) => {
                tracing::warn!(pod = %pod.key(), error = %err, "re-check before eviction failed");
                return Outcome::Failed;
            }
        }
        let mut delete_options = serde_json::json!({ "preconditions": { "uid": &*pod.uid } });
        if let Some(g) = self.config.grace_period_seconds {
            delete_options["gracePeriodSeconds"] = g.into();
        }
        if dry_run {
            delete_options["dryRun"] = serde_json::json!(["All"]);
        }
        let body = serde_json::json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {
                "name": &*pod.name,
                "namespace": &*pod.namespace,
                "annotations": {
                    ANNOTATION_REASON: &e.reason,
                    ANNOTATION_PLUGIN: e.plugin,
                    ANNOTATION_PROFILE: &e.profile,
                    ANNOTATION_EVICTED_BY: REPORTING_CONTROLLER,
                },
            },
            "deleteOptions": delete_options,
        });
        let url = format!(
            "/api/v1/namespaces/{}/pods/{}/eviction{}",
            pod.namespace,
            pod.name,
            if dry_run { "?dryRun=All" } else { "" }
        );
        let request = http::Request::post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&body).expect("eviction serializes"))
            .expect("valid request");
        self.api.throttle().await;
        match self.api.client.request_text(request).await {
            Ok(_) => Outcome::Evicted,
            Err(kube::Error::Api(status)) => match status.code {
                429 => Outcome::BlockedByDisruptionBudget,
                404 => Outcome::PodGone,
                409 => Outcome::UidChanged,
                500 if status.message.contains("more than one PodDisruptionBudget") => {
                    Outcome::MultipleBudgets
                }
                _ => {
                    tracing::warn!(pod = %pod.key(), code = status.code, message = %status.message, "eviction failed");
                    Outcome::Failed
                }
            },
            Err(err) => {
                tracing::warn!(pod = %pod.key(), error = %err, "eviction failed");
                Outcome::Failed
            }
        }
    }

    /// Records in `memory.gone` the pods evicted earlier in the cycle that the API no longer
    /// holds (their termination over); a pod that cannot be read is taken to terminate still.
    async fn note_terminated(&self, snap: &ClusterSnapshot, memory: &mut CycleMemory) {
        let waiting: Vec<_> = memory
            .evicted
            .iter()
            .copied()
            .filter(|p| !memory.gone.contains(p))
            .collect();
        for p in waiting {
            let pod = snap.pod(p);
            let pods: Api<Pod> = Api::namespaced(self.api.client.clone(), &pod.namespace);
            self.api.throttle().await;
            let gone = match pods.get_opt(&pod.name).await {
                Ok(None) => true,
                Ok(Some(current)) => current.metadata.uid.as_deref() != Some(&*pod.uid),
                Err(_) => false,
            };
            if gone {
                memory.gone.push(p);
            }
        }
    }

    /// Waits until the replacement of an evicted pod is bound: a pod of the same controller
    /// that the snapshot does not hold and no earlier wait claimed. Returns its node's name and
    /// a reference to it, or None when the time runs out (or the pod has no controller).
    async fn await_replacement(
        &self,
        snap: &ClusterSnapshot,
        e: &PlannedEviction,
        timeout: Duration,
        claimed: &mut std::collections::BTreeSet<String>,
    ) -> Option<(String, ObjectReference)> {
        let pod = snap.pod(e.pod);
        let owner = pod.owners.iter().find(|o| o.controller)?;
        let known: std::collections::BTreeSet<&str> = snap
            .pods_in_namespace(&pod.namespace)
            .map(|q| &*snap.pod(q).uid)
            .collect();
        // A ReplicaSet's pods share their pod-template-hash (other labels may be added to a
        // pod once it runs, such as its node's zone); otherwise every pod of the namespace.
        let params = match pod.labels.get("pod-template-hash") {
            Some(hash) => ListParams::default().labels(&format!("pod-template-hash={hash}")),
            None => ListParams::default(),
        };
        let pods: Api<Pod> = Api::namespaced(self.api.client.clone(), &pod.namespace);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            self.api.throttle().await;
            if let Ok(list) = pods.list(&params).await {
                for p in list.items {
                    let uid = p.metadata.uid.clone().unwrap_or_default();
                    if known.contains(uid.as_str()) || claimed.contains(&uid) {
                        continue;
                    }
                    let owned = p.metadata.owner_references.as_ref().is_some_and(|refs| {
                        refs.iter()
                            .any(|r| r.controller == Some(true) && *r.uid == *owner.uid)
                    });
                    let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
                    if let (true, Some(node)) = (owned, node) {
                        claimed.insert(uid.clone());
                        let reference = ObjectReference {
                            api_version: Some("v1".into()),
                            kind: Some("Pod".into()),
                            name: p.metadata.name.clone(),
                            namespace: Some(pod.namespace.to_string()),
                            uid: Some(uid),
                            ..Default::default()
                        };
                        return Some((node, reference));
                    }
                }
            }
            if tokio::time::Instant::now() >= deadline || !self.gate.open() {
                tracing::warn!(pod = %pod.key(), "no replacement bound within --await-placement-timeout; planning on with the prediction");
                return None;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Compares where a replacement landed with the prediction: a metric, and an event on the
    /// replacement when it landed elsewhere.
    async fn compare(
        &self,
        snap: &ClusterSnapshot,
        e: &PlannedEviction,
        landed: crate::snapshot::NodeId,
        replacement: &ObjectReference,
    ) {
        let result = placement_result(e, landed);
        self.metrics.prediction(result, e.plugin, &e.profile);
        let pod = snap.pod(e.pod);
        let landed = &snap.node(landed).name;
        let predicted = e
            .destination
            .map_or("no node".to_string(), |d| snap.node(d).name.to_string());
        tracing::info!(pod = %pod.key(), landed = %landed, predicted = %predicted, result, "replacement bound");
        if result != "missed" {
            return;
        }
        let event = Event {
            type_: EventType::Normal,
            reason: "PredictionMissed".into(),
            note: Some(truncate(&format!(
                "replacement of {} (evicted by {}/{}) was bound to node {landed}; the descheduler predicted {predicted}",
                pod.key(),
                e.profile,
                e.plugin
            ))),
            action: "Descheduling".into(),
            secondary: None,
        };
        self.api.throttle().await;
        if let Err(err) = self.recorder.publish(&event, replacement).await {
            tracing::warn!(pod = %pod.key(), error = %err, "publishing the event failed");
        }
    }

    async fn record(&self, snap: &ClusterSnapshot, e: &PlannedEviction, outcome: Outcome) {
        let pod = snap.pod(e.pod);
        let node = &snap.node(e.node).name;
        self.metrics.eviction(
            outcome.metric_result(),
            e.plugin,
            &e.profile,
            &pod.namespace,
            node,
        );
        let failed = outcome != Outcome::Evicted;
        if failed {
            tracing::warn!(pod = %pod.key(), node = %node, plugin = e.plugin, profile = %e.profile, result = outcome.as_str(), "eviction not done");
        } else {
            tracing::info!(pod = %pod.key(), node = %node, plugin = e.plugin, profile = %e.profile, reason = %e.reason, "evicted");
        }
        if failed && !self.config.failure_events {
            return;
        }
        let event = if failed {
            Event {
                type_: EventType::Warning,
                reason: "EvictionFailed".into(),
                note: Some(truncate(&format!(
                    "eviction by {}/{} from node {node} not done ({}): {}",
                    e.profile,
                    e.plugin,
                    outcome.as_str(),
                    e.reason
                ))),
                action: "Descheduling".into(),
                secondary: None,
            }
        } else {
            Event {
                type_: EventType::Normal,
                reason: "Descheduled".into(),
                note: Some(truncate(&format!(
                    "pod evicted from node {node} by {}/{}: {}",
                    e.profile, e.plugin, e.reason
                ))),
                action: "Descheduling".into(),
                secondary: None,
            }
        };
        let reference = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(pod.name.to_string()),
            namespace: Some(pod.namespace.to_string()),
            uid: Some(pod.uid.to_string()),
            ..Default::default()
        };
        self.api.throttle().await;
        if let Err(err) = self.recorder.publish(&event, &reference).await {
            tracing::warn!(pod = %pod.key(), error = %err, "publishing the event failed");
        }
    }
}

/// Event notes are limited to 1 kB.
fn truncate(s: &str) -> String {
    if s.len() <= 1000 {
        return s.to_string();
    }
    let mut end = 1000;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_landing_is_exact_an_alternative_or_missed() {
        let e = PlannedEviction {
            pod: 0,
            node: 0,
            profile: "p".into(),
            plugin: "LowNodeUtilization",
            reason: "r".into(),
            destination: Some(1),
            alternatives: vec![2, 3],
            gang: None,
        };
        assert_eq!(placement_result(&e, 1), "exact");
        assert_eq!(placement_result(&e, 3), "alternative");
        assert_eq!(placement_result(&e, 0), "missed");
        let none = PlannedEviction {
            destination: None,
            alternatives: Vec::new(),
            ..e
        };
        assert_eq!(placement_result(&none, 1), "missed");
        // back on its source, or on a node a plugin found overutilized: the workload stops
        let over = std::collections::BTreeMap::from([(
            "p/LowNodeUtilization".to_string(),
            vec!["hot".to_string()],
        )]);
        assert_eq!(
            stops_workload(&none, 0, "n0", &over),
            Some("back on its source node")
        );
        assert_eq!(
            stops_workload(&none, 5, "hot", &over),
            Some("on a node the plan counts as overutilized")
        );
        assert_eq!(stops_workload(&none, 1, "cold", &over), None);
    }
}
