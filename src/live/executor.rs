//! The live executor: attempts a plan through the Eviction API (policy/v1), safely. It plans
//! nothing and builds no report: the cycle (`app::cycle`) plans, hands each plan to
//! [`LiveCycle::attempt`], absorbs what happened and plans again or finishes.
//!
//! - Each pod is re-checked just before its call: it still exists, has the same UID, is on
//!   the same node and is not terminating or finished.
//! - The call carries the policy's gracePeriodSeconds, a UID precondition, and annotations
//!   saying why and by whom.
//! - HTTP 429 (a disruption budget allows nothing now) is recorded as blocked and never
//!   retried in the cycle; 500 for several budgets, 404 (gone) and 409 (UID changed) are
//!   recorded as such.
//! - A refused eviction ends the pass: the cycle pins the pod and re-plans the rest from the
//!   new state (pods evicted so far count as gone), which frees its place in the limits.
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
//!   landed elsewhere), and ends the pass, so that the rest of the cycle is planned with the
//!   replacement where it really is (`plan::CycleMemory::absorb` then stops a workload whose
//!   replacement came back to its source node or onto an overutilized node).

pub use super::cancel::Gate;
use super::client::ApiClient;
use super::surge::{SurgeEnd, Surger, Victim};
use crate::framework::{Mechanism, PlannedEviction};
use crate::metrics::Metrics;
use crate::outcome::{Attempt, Attempts, Next, Outcome};
use crate::plan::{CycleMemory, EvictionPlan};
use crate::snapshot::{ClusterSnapshot, PodId};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, ListParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use std::collections::BTreeSet;
use std::time::Duration;

pub const ANNOTATION_REASON: &str = "descheduler.alpha.kubernetes.io/reason";
pub const ANNOTATION_PLUGIN: &str = "descheduler.alpha.kubernetes.io/plugin";
pub const ANNOTATION_PROFILE: &str = "descheduler.alpha.kubernetes.io/profile";
pub const ANNOTATION_EVICTED_BY: &str = "descheduler.alpha.kubernetes.io/evicted-by";
pub const REPORTING_CONTROLLER: &str = "descheduler";

#[derive(Debug, Clone)]
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
    /// Upstream's EvictionsInBackground (`--feature-gates`): the eviction of a pod annotated
    /// `descheduler.alpha.kubernetes.io/request-evict-only` that the API answers with HTTP 429
    /// "Eviction triggered evacuation" is an eviction in the background, not a refusal.
    pub evictions_in_background: bool,
    /// `--surge-timeout`: how long a surge waits for its new pod to be Ready.
    pub surge_timeout: Duration,
}

/// `--surge-timeout`'s default.
pub const DEFAULT_SURGE_TIMEOUT: Duration = Duration::from_secs(300);

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            grace_period_seconds: None,
            failure_events: false,
            global_rate: None,
            node_rate: None,
            instance: None,
            await_placement: None,
            evictions_in_background: false,
            surge_timeout: DEFAULT_SURGE_TIMEOUT,
        }
    }
}

/// A surge's new pod is looked for this often.
const SURGE_POLL: Duration = Duration::from_millis(500);

/// What the API's answer says when it carries out an eviction in the background (KubeVirt's
/// webhook: "Eviction triggered evacuation of VMI ..."), as upstream reads it.
pub const EVICTION_IN_BACKGROUND_TEXT: &str = "Eviction triggered evacuation";

pub struct LiveExecutor {
    api: ApiClient,
    config: ExecutorConfig,
    metrics: Metrics,
    recorder: Recorder,
    global: Option<DefaultDirectRateLimiter>,
    per_node: Option<DefaultKeyedRateLimiter<String>>,
    gate: Gate,
    /// Pods (by UID) whose eviction the API server answered 429 with a Retry-After: not
    /// asked again before then.
    retry_after: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
}

/// An eviction the API server did not carry out.
enum Refused {
    /// Its answer (a Status) and the wait it asked for (`Retry-After`, or the Status's
    /// `details.retryAfterSeconds`).
    Api(Box<kube::core::Status>, Option<Duration>),
    /// No answer: the request failed, or its answer was lost on the way.
    Transport(kube::Error),
}

/// The wait a refusal asks for: the `Retry-After` header (seconds), else the Status's
/// `details.retryAfterSeconds`; none when neither says a positive number.
fn retry_after(headers: &http::HeaderMap, status: &kube::core::Status) -> Option<Duration> {
    headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .or_else(|| {
            status
                .details
                .as_ref()
                .map(|d| u64::from(d.retry_after_seconds))
        })
        .filter(|&s| s > 0)
        .map(Duration::from_secs)
}

/// The executor's side of one cycle ([`LiveExecutor::cycle`]): it attempts each plan the
/// cycle makes, until something asks for a re-plan. It plans nothing and keeps no ledger:
/// only the replacements its waits claimed and the failed calls in a row.
pub struct LiveCycle<'e> {
    executor: &'e LiveExecutor,
    /// Replacements (UIDs) earlier waits of the cycle took as theirs.
    claimed: BTreeSet<String>,
    /// Failed calls in a row, across the cycle's plans.
    failures: usize,
}

impl LiveCycle<'_> {
    /// Attempts `plan`'s evictions in order, until one asks for a re-plan (a refusal, a
    /// replacement seen bound with `--await-placement`), the plan ends, or the cycle must stop
    /// (the gate closed, the API kept failing). `memory`: what the cycle absorbed so far.
    pub async fn attempt(
        &mut self,
        snap: &ClusterSnapshot,
        plan: &EvictionPlan,
        memory: &CycleMemory,
    ) -> Attempts {
        let mut done = Vec::new();
        let evictions = &plan.evictions;
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
            if group[0].gang.is_some() && !self.executor.gang_would_go(snap, group, &mut done).await
            {
                return Attempts::next(done, Next::Replan);
            }
            for (k, e) in group.iter().enumerate() {
                match self.attempt_one(snap, e, &mut done).await {
                    None => {}
                    Some(Next::Replan) if done.last().is_some_and(|a| a.landed.is_some()) => {
                        // The rest of the cycle is planned from where it really landed,
                        // with the evicted pods whose termination is over gone.
                        let gone = self.executor.terminated(snap, memory, &done).await;
                        return Attempts {
                            done,
                            gone,
                            next: Next::Replan,
                        };
                    }
                    Some(Next::Replan) => {
                        // Refused: the rest of a gang is never attempted after a refusal.
                        done.extend(
                            group[k + 1..]
                                .iter()
                                .map(|m| Attempt::new(m, Outcome::GangNotAttempted)),
                        );
                        return Attempts::next(done, Next::Replan);
                    }
                    Some(next) => return Attempts::next(done, next),
                }
            }
        }
        Attempts::next(done, Next::Finish)
    }

    /// Attempts one eviction; what the cycle does next when it cannot go on with the plan.
    async fn attempt_one(
        &mut self,
        snap: &ClusterSnapshot,
        e: &PlannedEviction,
        done: &mut Vec<Attempt>,
    ) -> Option<Next> {
        let ex = self.executor;
        if !ex.gate.open() || !ex.wait_for_rate_limits(&snap.node(e.node).name).await {
            tracing::warn!(pod = %snap.pod(e.pod).key(), "not attempted: shutting down or leadership lost");
            done.push(Attempt::new(e, Outcome::NotAttempted));
            return Some(Next::Stop(None));
        }
        if let Mechanism::Surge { deployment } = &e.mechanism {
            let (outcome, landed) = ex.surge(snap, e, deployment).await;
            let mut attempt = Attempt::new(e, outcome);
            attempt.landed = landed;
            done.push(attempt);
            // The cluster changed as no plan foresaw (a pod more, then one fewer, or a
            // rollback): the rest is planned from where the new pod is, or without the pod
            // that could not be moved.
            return Some(Next::Replan);
        }
        let outcome = ex.evict(snap, e, false).await;
        ex.record(snap, e, outcome).await;
        done.push(Attempt::new(e, outcome));
        self.failures = if outcome == Outcome::Failed {
            self.failures + 1
        } else {
            0
        };
        if self.failures >= MAX_CONSECUTIVE_FAILURES {
            let why = format!("{} eviction calls in a row failed (API server unreachable or erring); the rest of this cycle's plan is not attempted", self.failures);
            tracing::error!("{why}");
            return Some(Next::Stop(Some(why)));
        }
        if outcome == Outcome::EvictionInBackground {
            // Requested, and carried out by whoever answered: spent in the plan as planned.
            return None;
        }
        if outcome != Outcome::Evicted {
            return Some(Next::Replan);
        }
        let (Some(timeout), None) = (ex.config.await_placement, e.gang) else {
            return None;
        };
        let (name, replacement) = ex
            .await_replacement(snap, e, timeout, &mut self.claimed)
            .await?;
        if let Some(landed) = snap.node_id(&name) {
            ex.compare(snap, e, landed, &replacement).await;
        }
        if let Some(last) = done.last_mut() {
            last.landed = Some(name);
        }
        Some(Next::Replan)
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
            retry_after: Default::default(),
        }
    }

    /// Sends an eviction request: Ok when the API server carried it out.
    async fn post_eviction(&self, request: http::Request<Vec<u8>>) -> Result<(), Refused> {
        use http_body_util::BodyExt;
        let response = self
            .api
            .client
            .send(request.map(kube::client::Body::from))
            .await
            .map_err(Refused::Transport)?;
        let code = response.status();
        let headers = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(Refused::Transport)?
            .to_bytes();
        if code.is_success() {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&body);
        let status = serde_json::from_str::<kube::core::Status>(&text)
            .ok()
            .filter(|s| s.code != 0)
            .unwrap_or_else(|| {
                kube::core::Status::failure(text.trim(), "").with_code(code.as_u16())
            });
        let wait = retry_after(&headers, &status);
        Err(Refused::Api(Box::new(status), wait))
    }

    /// Whether the API server asked not to be asked again about pod `uid` yet: until when.
    fn asked_to_wait(&self, uid: &str) -> Option<std::time::Instant> {
        let mut waits = self.retry_after.lock().expect("not poisoned");
        let now = std::time::Instant::now();
        waits.retain(|_, until| *until > now);
        waits.get(uid).copied()
    }

    /// After an eviction call whose answer never came: whether the pod is going anyway (it
    /// is gone, or terminating with the same UID), so the eviction was carried out.
    async fn went_anyway(&self, pods: &Api<Pod>, name: &str, uid: &str) -> bool {
        self.api.throttle().await;
        match pods.get_opt(name).await {
            Ok(None) => true,
            Ok(Some(p)) => {
                p.metadata.uid.as_deref() != Some(uid) || p.metadata.deletion_timestamp.is_some()
            }
            Err(_) => false,
        }
    }

    /// The executor's side of one cycle: the attempts of each plan the cycle makes.
    pub fn cycle(&self) -> LiveCycle<'_> {
        LiveCycle {
            executor: self,
            claimed: Default::default(),
            failures: 0,
        }
    }

    /// Waits for the global and the node's rate limit; false if the gate closes meanwhile.
    async fn wait_for_rate_limits(&self, node: &str) -> bool {
        let ready = async {
            if let Some(g) = &self.global {
                g.until_ready().await;
            }
            if let Some(k) = &self.per_node {
                k.until_key_ready(&node.to_string()).await;
            }
        };
        tokio::select! {
            biased;
            _ = self.gate.closed() => false,
            _ = ready => self.gate.open(),
        }
    }

    /// Re-checks the pod and calls the Eviction API; with `dry_run`, as `dryRun=All`: the API
    /// server checks everything (the pod, its disruption budget) and evicts nothing.
    async fn evict(&self, snap: &ClusterSnapshot, e: &PlannedEviction, dry_run: bool) -> Outcome {
        let pod = snap.pod(e.pod);
        let node = &snap.node(e.node).name;
        let pods: Api<Pod> = Api::namespaced(self.api.client.clone(), &pod.namespace);
        // A 429 that said when to ask again is the answer until then.
        if let Some(until) = self.asked_to_wait(&pod.uid) {
            tracing::info!(
                pod = %pod.key(),
                seconds = until.saturating_duration_since(std::time::Instant::now()).as_secs_f64(),
                "not asked again yet: the API server's Retry-After has not passed"
            );
            return Outcome::BlockedByDisruptionBudget;
        }
        // Re-check just before the call.
        self.api.throttle().await;
        let request_evict_only;
        match pods.get_opt(&pod.name).await {
            Ok(None) => return Outcome::PodGone,
            Ok(Some(current)) => {
                request_evict_only = current.metadata.annotations.as_ref().is_some_and(|a| {
                    a.contains_key(crate::snapshot::REQUEST_EVICT_ONLY_ANNOTATION)
                });
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
        match self.post_eviction(request).await {
            Ok(()) => Outcome::Evicted,
            Err(Refused::Api(status, wait)) => match status.code {
                // Upstream's EvictionsInBackground: an eviction the API carries out in the
                // background (KubeVirt's live migration), for pods that ask for it only.
                429 if self.config.evictions_in_background
                    && request_evict_only
                    && status.message.contains(EVICTION_IN_BACKGROUND_TEXT) =>
                {
                    Outcome::EvictionInBackground
                }
                429 => {
                    if let Some(wait) = wait {
                        self.retry_after
                            .lock()
                            .expect("not poisoned")
                            .insert(pod.uid.to_string(), std::time::Instant::now() + wait);
                    }
                    Outcome::BlockedByDisruptionBudget
                }
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
            // The call may have reached the API server and only its answer been lost (a
            // connection cut): what the pod is now says whether it was carried out.
            Err(Refused::Transport(err))
                if !dry_run && self.went_anyway(&pods, &pod.name, &pod.uid).await =>
            {
                tracing::warn!(pod = %pod.key(), error = %err, "the eviction's answer was lost, but the pod is going: evicted");
                Outcome::Evicted
            }
            Err(Refused::Transport(err)) => {
                tracing::warn!(pod = %pod.key(), error = %err, "eviction failed");
                Outcome::Failed
            }
        }
    }

    /// Moves the pod of `e` by a surge of its Deployment (`ns/name`), [`Surger::surge`]:
    /// the outcome, and the node its new pod landed on.
    async fn surge(
        &self,
        snap: &ClusterSnapshot,
        e: &PlannedEviction,
        deployment: &str,
    ) -> (Outcome, Option<String>) {
        let pod = snap.pod(e.pod);
        let node = &snap.node(e.node).name;
        let name = deployment.split_once('/').map_or(deployment, |(_, n)| n);
        let surger = self.surger();
        let victim = Victim {
            namespace: &pod.namespace,
            name: &pod.name,
            uid: &pod.uid,
            node,
        };
        let now = chrono::Utc::now().timestamp();
        let end = surger.surge(name, &victim, now).await;
        self.metrics.surge(end.label(), &pod.namespace);
        let (outcome, landed, event) = match &end {
            SurgeEnd::Completed { landed, new_pod } => {
                tracing::info!(pod = %pod.key(), deployment, new_pod, landed, "surged: the new pod is Ready and the pod deleted");
                (
                    Outcome::Surged,
                    Some(landed.clone()),
                    (EventType::Normal, "Surged", format!("pod moved from node {node} by a surge of Deployment {deployment} (new pod {new_pod} Ready on {landed}) by {}/{}: {}", e.profile, e.plugin, e.reason)),
                )
            }
            SurgeEnd::RolledBack(why) | SurgeEnd::NotStarted(why) | SurgeEnd::Failed(why) => {
                let (outcome, type_, reason, what) = match &end {
                    SurgeEnd::RolledBack(_) => (
                        Outcome::SurgeRolledBack,
                        EventType::Warning,
                        "SurgeRolledBack",
                        "rolled back",
                    ),
                    SurgeEnd::NotStarted(_) => (
                        Outcome::NoLongerEvictable,
                        EventType::Normal,
                        "SurgeNotStarted",
                        "not started",
                    ),
                    _ => (Outcome::Failed, EventType::Warning, "SurgeFailed", "failed"),
                };
                tracing::warn!(pod = %pod.key(), deployment, %why, "surge {what}");
                let note =
                    format!("surge of Deployment {deployment} to move this pod {what}: {why}");
                (outcome, None, (type_, reason, note))
            }
        };
        let (type_, reason, note) = event;
        let on_pod = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(pod.name.to_string()),
            namespace: Some(pod.namespace.to_string()),
            uid: Some(pod.uid.to_string()),
            ..Default::default()
        };
        self.surge_event(type_, reason, &note, on_pod).await;
        self.surge_event(type_, reason, &note, deployment_ref(&pod.namespace, name))
            .await;
        (outcome, landed)
    }

    /// Publishes a surge's event on `on` (a pod or a Deployment).
    async fn surge_event(&self, type_: EventType, reason: &str, note: &str, on: ObjectReference) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(truncate(note)),
            action: "Descheduling".into(),
            secondary: None,
        };
        self.api.throttle().await;
        if let Err(err) = self.recorder.publish(&event, &on).await {
            tracing::warn!(error = %err, "publishing the surge's event failed");
        }
    }

    fn surger(&self) -> Surger<'_> {
        Surger {
            api: &self.api,
            timeout: self.config.surge_timeout,
            poll: SURGE_POLL,
            gate: &self.gate,
        }
    }

    /// Completes or rolls back the surges an earlier run left in flight (their Deployments
    /// carry the mark and its deadline passed), as the snapshot shows them, at `now`.
    pub async fn recover_surges(&self, snap: &ClusterSnapshot, now: i64) {
        let marked: Vec<(String, String)> = snap
            .workloads
            .deployments
            .iter()
            .filter(|d| d.surge_in_flight.is_some())
            .map(|d| (d.namespace.to_string(), d.name.to_string()))
            .collect();
        if marked.is_empty() || !self.gate.open() {
            return;
        }
        for r in self.surger().recover(&marked, now).await {
            let result = if r.problem.is_some() {
                "recovery_failed"
            } else {
                "recovered"
            };
            self.metrics.surge(result, &r.namespace);
            let note = format!(
                "a surge left in flight by an earlier run was finished: {:?}, the Deployment back to {} replicas{}",
                r.action,
                r.replicas,
                r.problem.as_deref().map(|p| format!("; {p}")).unwrap_or_default()
            );
            tracing::warn!(deployment = %format!("{}/{}", r.namespace, r.deployment), "{note}");
            let on = deployment_ref(&r.namespace, &r.deployment);
            self.surge_event(EventType::Warning, "SurgeRecovered", &note, on)
                .await;
        }
    }

    /// Asks the API server, with `dryRun=All`, whether every member of a gang evicted whole
    /// would go (it checks each pod and its disruption budget, and evicts nothing). At the
    /// first refusal, records the gang's attempts (the refused member's outcome, the others
    /// not attempted) in `done` and answers false: no member is evicted.
    async fn gang_would_go(
        &self,
        snap: &ClusterSnapshot,
        group: &[PlannedEviction],
        done: &mut Vec<Attempt>,
    ) -> bool {
        for (k, e) in group.iter().enumerate() {
            let outcome = self.evict(snap, e, true).await;
            if outcome == Outcome::Evicted {
                continue;
            }
            self.record(snap, e, outcome).await;
            done.extend(group.iter().enumerate().map(|(j, m)| {
                let o = if j == k {
                    outcome
                } else {
                    Outcome::GangNotAttempted
                };
                Attempt::new(m, o)
            }));
            tracing::warn!(pod = %snap.pod(e.pod).key(), result = outcome.as_str(), "a member of a whole gang would be refused: no member is evicted");
            return false;
        }
        true
    }

    /// The pods evicted earlier in the cycle (absorbed in `memory`, or `done` in this pass)
    /// that the API no longer holds (their termination over) and `memory` does not know
    /// gone; a pod that cannot be read is taken to terminate still.
    async fn terminated(
        &self,
        snap: &ClusterSnapshot,
        memory: &CycleMemory,
        done: &[Attempt],
    ) -> Vec<PodId> {
        let evicted = done
            .iter()
            .filter(|a| a.outcome.moved())
            .map(|a| a.eviction.pod);
        let waiting: Vec<PodId> = memory
            .evicted
            .iter()
            .copied()
            .chain(evicted)
            .filter(|p| !memory.gone.contains(p))
            .collect();
        let mut gone = Vec::new();
        for p in waiting {
            let pod = snap.pod(p);
            let pods: Api<Pod> = Api::namespaced(self.api.client.clone(), &pod.namespace);
            self.api.throttle().await;
            let terminated = match pods.get_opt(&pod.name).await {
                Ok(None) => true,
                Ok(Some(current)) => current.metadata.uid.as_deref() != Some(&*pod.uid),
                Err(_) => false,
            };
            if terminated {
                gone.push(p);
            }
        }
        gone
    }

    /// Waits until the replacement of an evicted pod is bound: a pod of the same controller
    /// that the snapshot does not hold and no earlier wait claimed. Returns its node's name and
    /// a reference to it, or None when the time runs out (or the pod has no controller).
    async fn await_replacement(
        &self,
        snap: &ClusterSnapshot,
        e: &PlannedEviction,
        timeout: Duration,
        claimed: &mut BTreeSet<String>,
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
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                _ = self.gate.closed() => {}
            }
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
        if outcome == Outcome::EvictionInBackground {
            // As upstream: counted ("background"), logged, no event until the pod goes.
            tracing::info!(pod = %pod.key(), node = %node, plugin = e.plugin, profile = %e.profile, reason = %e.reason, "eviction in the background requested");
            return;
        }
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

/// A Deployment, as events name it.
fn deployment_ref(namespace: &str, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        ..Default::default()
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
    use crate::snapshot::NodeId;

    #[test]
    fn a_refusal_asks_to_wait_by_its_header_else_its_status() {
        let status = |seconds: u32| {
            let mut s = kube::core::Status::failure("no", "TooManyRequests").with_code(429);
            if seconds > 0 {
                s.details = Some(
                    serde_json::from_value(serde_json::json!({ "retryAfterSeconds": seconds }))
                        .unwrap(),
                );
            }
            s
        };
        let mut headers = http::HeaderMap::new();
        assert_eq!(retry_after(&headers, &status(0)), None);
        assert_eq!(
            retry_after(&headers, &status(7)),
            Some(Duration::from_secs(7))
        );
        headers.insert(http::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(
            retry_after(&headers, &status(7)),
            Some(Duration::from_secs(3)),
            "the header first"
        );
        headers.insert(http::header::RETRY_AFTER, "0".parse().unwrap());
        assert_eq!(retry_after(&headers, &status(0)), None, "0: no wait");
    }

    #[test]
    fn a_landing_is_exact_an_alternative_or_missed() {
        let e = PlannedEviction {
            pod: PodId::new(0),
            node: NodeId::new(0),
            profile: "p".into(),
            plugin: "LowNodeUtilization",
            reason: "r".into(),
            destination: Some(NodeId::new(1)),
            alternatives: vec![NodeId::new(2), NodeId::new(3)],
            gang: None,
            budgets: Vec::new(),
            mechanism: Default::default(),
        };
        assert_eq!(placement_result(&e, NodeId::new(1)), "exact");
        assert_eq!(placement_result(&e, NodeId::new(3)), "alternative");
        assert_eq!(placement_result(&e, NodeId::new(0)), "missed");
        let none = PlannedEviction {
            destination: None,
            alternatives: Vec::new(),
            ..e
        };
        assert_eq!(placement_result(&none, NodeId::new(1)), "missed");
    }
}
