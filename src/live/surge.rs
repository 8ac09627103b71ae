//! Make before break: a pod of a Deployment moved by a surge (DefaultEvictor's `moveMode`),
//! so the Deployment never has fewer ready replicas than before.
//!
//! 1. The Deployment is read: not paused, not in a rollout, no surge already in flight, and
//!    the pod (the victim) still there with its UID, on its node.
//! 2. The surge is written on the Deployment (`descheduler.alpha.kubernetes.io/surge-in-flight`:
//!    the replicas before, the victim, a deadline), with its resourceVersion as a
//!    precondition: that is the lock no other descheduler takes, and what a restarted one
//!    finds ([`recover`]).
//! 3. The victim is marked to go first on a scale-down (`controller.kubernetes.io/pod-deletion-cost`
//!    at its lowest), with its UID as a precondition.
//! 4. The Deployment is scaled up by one through its `scale` subresource, with the scale's
//!    resourceVersion as a precondition (no lost update against a concurrent writer).
//! 5. The executor waits, bounded (`--surge-timeout`), until a new pod of the Deployment is
//!    Ready, and notes where it landed.
//! 6. The Deployment is scaled back down by one (precondition again): the ReplicaSet deletes
//!    its lowest-cost ready pod, the victim; the executor checks that it is the victim that
//!    goes. The mark on the Deployment is removed.
//!
//! When the new pod does not become Ready in time (no room, an image, a crash) or the cycle
//! shuts down meanwhile, the surge is rolled back: the Deployment scaled back (a pod that is not
//! ready is deleted before ready ones, whatever its cost), the victim's mark taken off (its own
//! deletion cost put back) and the Deployment's mark removed. No Deployment is left one
//! replica up: a mark whose deadline passed (its descheduler died mid-surge) is completed or
//! rolled back by the next run, or the next leader, alike: the Deployment is brought back to
//! the replicas the mark says, which deletes the victim if the new pod is Ready, else the new
//! pod.

use super::cancel::Gate;
use super::client::ApiClient;
use crate::snapshot::{SurgeMark, POD_DELETION_COST_ANNOTATION, SURGE_IN_FLIGHT_ANNOTATION};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The lowest deletion cost: the ReplicaSet deletes this pod before every other ready one.
pub const FIRST_TO_GO: &str = "-2147483648";
/// How long past its timeout a surge's mark holds before another run may take it over: as
/// long again as the timeout, at least this long (the rollback's calls take time too).
const DEADLINE_MARGIN_SECONDS: i64 = 10;
/// How long a Deployment found in a rollout is waited for before its surge is not started
/// (at most the surge's timeout): one an earlier move just scaled settles in a moment.
const SETTLE: Duration = Duration::from_secs(15);
/// How long the executor waits, after the scale-down, for the victim to be deleted.
const VICTIM_WAIT: Duration = Duration::from_secs(30);

/// The pod a surge moves.
#[derive(Debug, Clone)]
pub struct Victim<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
    pub node: &'a str,
}

/// How a surge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SurgeEnd {
    /// The new pod (`new_pod`) became Ready on `landed`, the Deployment is back to its
    /// replicas, and the victim was deleted.
    Completed { landed: String, new_pod: String },
    /// Started and undone (`why`): the Deployment is back to its replicas, the victim untouched.
    RolledBack(String),
    /// Nothing was changed (`why`): the Deployment or the pod is no longer as planned.
    NotStarted(String),
    /// Something went wrong after the scale-up (`why`, with what is left as it is).
    Failed(String),
}

impl SurgeEnd {
    /// The `result` label of `descheduler_surges_total`.
    pub fn label(&self) -> &'static str {
        match self {
            SurgeEnd::Completed { .. } => "completed",
            SurgeEnd::RolledBack(_) => "rolled_back",
            SurgeEnd::NotStarted(_) => "not_started",
            SurgeEnd::Failed(_) => "failed",
        }
    }
}

/// Why the Deployment, as the API has it now, may not be surged.
pub fn refusal(d: &Deployment) -> Option<String> {
    let spec = &d.spec;
    let name = d.metadata.name.as_deref().unwrap_or_default();
    if annotation(&d.metadata, SURGE_IN_FLIGHT_ANNOTATION).is_some() {
        return Some(format!(
            "a surge of Deployment {name} is in flight ({SURGE_IN_FLIGHT_ANNOTATION})"
        ));
    }
    if spec.paused == Some(true) {
        return Some(format!("Deployment {name} is paused"));
    }
    let replicas = spec.replicas.unwrap_or(1);
    let status = d.status.clone().unwrap_or_default();
    let generation = d.metadata.generation.unwrap_or(0);
    if status.observed_generation.unwrap_or(0) < generation
        || status.updated_replicas.unwrap_or(0) < replicas
        || status.replicas.unwrap_or(0) > replicas
        || status.available_replicas.unwrap_or(0) < replicas
    {
        return Some(format!(
            "Deployment {name} is in the middle of a rollout (generation {generation} observed {}, {} of {replicas} replicas updated, {} available, {} in all)",
            status.observed_generation.unwrap_or(0),
            status.updated_replicas.unwrap_or(0),
            status.available_replicas.unwrap_or(0),
            status.replicas.unwrap_or(0)
        ));
    }
    None
}

fn annotation<'a>(
    meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

/// The label selector of a Deployment as a query (`app=web,tier in (a,b)`).
fn selector(d: &Deployment) -> Option<String> {
    let s = &d.spec.selector;
    let mut parts: Vec<String> = s
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in s.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default().join(",");
        parts.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            "DoesNotExist" => format!("!{}", e.key),
            _ => return None,
        });
    }
    (!parts.is_empty()).then(|| parts.join(","))
}

/// Whether a pod is Ready and not terminating.
fn ready(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
        && p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// What a new pod that is not Ready is doing, for the rollback's reason.
fn state_of(p: &Pod) -> String {
    let name = p.metadata.name.as_deref().unwrap_or_default();
    let status = p.status.clone().unwrap_or_default();
    let scheduled = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled");
    match (
        p.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        scheduled,
    ) {
        (None, Some(c)) if c.status == "False" => format!(
            "its new pod {name} is not scheduled: {}",
            c.message.as_deref().unwrap_or("no reason given")
        ),
        (None, _) => format!("its new pod {name} is not scheduled yet"),
        (Some(node), _) => format!(
            "its new pod {name} runs on {node} but is not Ready (phase {})",
            status.phase.as_deref().unwrap_or("unknown")
        ),
    }
}

/// What a surge needs from the cluster and the process.
pub struct Surger<'a> {
    pub api: &'a ApiClient,
    /// How long the new pod may take to become Ready.
    pub timeout: Duration,
    /// How often the new pod is looked for.
    pub poll: Duration,
    /// Closed on shutdown or lost leadership: the surge in flight is rolled back.
    pub gate: &'a Gate,
}

impl Surger<'_> {
    fn deployments(&self, namespace: &str) -> Api<Deployment> {
        Api::namespaced(self.api.client.clone(), namespace)
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.api.client.clone(), namespace)
    }

    /// Moves `victim` by a surge of Deployment `deployment` (its name) in the victim's
    /// namespace, at `now` (unix seconds).
    pub async fn surge(&self, deployment: &str, victim: &Victim<'_>, now: i64) -> SurgeEnd {
        let ns = victim.namespace;
        let deployments = self.deployments(ns);
        let pods = self.pods(ns);
        // A Deployment an earlier move just scaled settles for a moment (its controller
        // observes the new generation, the old pod terminates): waited for, bounded.
        let started = Instant::now();
        let d = loop {
            self.api.throttle().await;
            let d = match deployments.get_opt(deployment).await {
                Ok(Some(d)) => d,
                Ok(None) => {
                    return SurgeEnd::NotStarted(format!("Deployment {ns}/{deployment} is gone"))
                }
                Err(e) => {
                    return SurgeEnd::NotStarted(format!(
                        "reading Deployment {ns}/{deployment}: {e}"
                    ))
                }
            };
            let Some(why) = refusal(&d) else {
                break d;
            };
            let settling = d.spec.paused != Some(true)
                && annotation(&d.metadata, SURGE_IN_FLIGHT_ANNOTATION).is_none();
            if !settling || started.elapsed() >= SETTLE.min(self.timeout) || !self.gate.open() {
                return SurgeEnd::NotStarted(why);
            }
            tokio::time::sleep(self.poll).await;
        };
        let Some(selector) = selector(&d) else {
            return SurgeEnd::NotStarted(format!(
                "Deployment {ns}/{deployment} has a selector this program cannot list pods by"
            ));
        };
        let replicas = d.spec.replicas.unwrap_or(1);
        // The victim, as planned.
        self.api.throttle().await;
        let cost = match pods.get_opt(victim.name).await {
            Ok(Some(p))
                if p.metadata.uid.as_deref() == Some(victim.uid)
                    && p.metadata.deletion_timestamp.is_none()
                    && p.spec.as_ref().and_then(|s| s.node_name.as_deref())
                        == Some(victim.node) =>
            {
                annotation(&p.metadata, POD_DELETION_COST_ANNOTATION).map(str::to_string)
            }
            Ok(_) => {
                return SurgeEnd::NotStarted(format!(
                    "pod {ns}/{} is gone, replaced, terminating or moved",
                    victim.name
                ))
            }
            Err(e) => {
                return SurgeEnd::NotStarted(format!("reading pod {ns}/{}: {e}", victim.name))
            }
        };
        let before = match self.pod_uids(ns, &selector).await {
            Ok(uids) => uids,
            Err(e) => {
                return SurgeEnd::NotStarted(format!(
                    "listing the pods of Deployment {ns}/{deployment}: {e}"
                ))
            }
        };
        // 2. The mark on the Deployment: the lock, and what a restarted run finds.
        let mark = SurgeMark {
            replicas,
            victim_uid: victim.uid.to_string(),
            victim: victim.name.to_string(),
            deadline: now
                + self.timeout.as_secs() as i64
                + (self.timeout.as_secs() as i64).max(DEADLINE_MARGIN_SECONDS),
            cost: cost.clone(),
        };
        let patch = serde_json::json!({
            "metadata": {
                "resourceVersion": d.metadata.resource_version,
                "annotations": { SURGE_IN_FLIGHT_ANNOTATION: mark.encode() },
            }
        });
        self.api.throttle().await;
        if let Err(e) = deployments
            .patch(deployment, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            return SurgeEnd::NotStarted(format!(
                "marking Deployment {ns}/{deployment} (it changed meanwhile, or the patch was refused): {e}"
            ));
        }
        // 3. The victim goes first on the scale-down.
        let patch = serde_json::json!({
            "metadata": {
                "uid": victim.uid,
                "annotations": { POD_DELETION_COST_ANNOTATION: FIRST_TO_GO },
            }
        });
        self.api.throttle().await;
        if let Err(e) = pods
            .patch(victim.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            self.unmark(ns, deployment).await;
            return SurgeEnd::NotStarted(format!(
                "marking pod {ns}/{} to go first: {e}",
                victim.name
            ));
        }
        // 4. One replica more.
        match self.scale(ns, deployment, replicas, replicas + 1).await {
            Ok(()) => {}
            Err(why) => {
                self.restore_victim(ns, victim.name, victim.uid, cost.as_deref())
                    .await;
                self.unmark(ns, deployment).await;
                return SurgeEnd::NotStarted(format!(
                    "scaling Deployment {ns}/{deployment} up: {why}"
                ));
            }
        }
        tracing::info!(deployment = %format!("{ns}/{deployment}"), pod = victim.name, replicas = replicas + 1, "surge: scaled up, waiting for the new pod to be Ready");
        // 5. The new pod, Ready.
        let new_pod = match self.await_new_ready(ns, &selector, &before).await {
            Ok(found) => found,
            Err(why) => {
                return self
                    .roll_back(ns, deployment, replicas, victim, cost.as_deref(), why)
                    .await
            }
        };
        // 6. One replica fewer: the victim goes.
        if let Err(why) = self.scale(ns, deployment, replicas + 1, replicas).await {
            self.restore_victim(ns, victim.name, victim.uid, cost.as_deref())
                .await;
            self.unmark(ns, deployment).await;
            return SurgeEnd::Failed(format!(
                "scaling Deployment {ns}/{deployment} back down to {replicas}: {why}; the Deployment is left as it is"
            ));
        }
        let victim_went = self.victim_goes(ns, victim.name, victim.uid).await;
        self.unmark(ns, deployment).await;
        if !victim_went {
            self.restore_victim(ns, victim.name, victim.uid, cost.as_deref())
                .await;
            return SurgeEnd::Failed(format!(
                "Deployment {ns}/{deployment} is back to {replicas} replicas, but its ReplicaSet did not delete pod {} within {} s (another pod went instead?)",
                victim.name,
                VICTIM_WAIT.as_secs()
            ));
        }
        SurgeEnd::Completed {
            landed: new_pod.1,
            new_pod: new_pod.0,
        }
    }

    /// The UIDs of the pods the selector selects now.
    async fn pod_uids(&self, ns: &str, selector: &str) -> Result<BTreeSet<String>, kube::Error> {
        self.api.throttle().await;
        let list = self
            .pods(ns)
            .list(&ListParams::default().labels(selector))
            .await?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|p| p.metadata.uid)
            .collect())
    }

    /// Waits until a pod the selector selects, not among `before`, is Ready: its name and
    /// node. Err: why not, when the timeout passes or the gate closes first.
    async fn await_new_ready(
        &self,
        ns: &str,
        selector: &str,
        before: &BTreeSet<String>,
    ) -> Result<(String, String), String> {
        let started = Instant::now();
        let mut last = "its new pod was not created".to_string();
        loop {
            self.api.throttle().await;
            match self
                .pods(ns)
                .list(&ListParams::default().labels(selector))
                .await
            {
                Ok(list) => {
                    let new: Vec<&Pod> = list
                        .items
                        .iter()
                        .filter(|p| p.metadata.uid.as_ref().is_some_and(|u| !before.contains(u)))
                        .collect();
                    if let Some(p) = new.iter().find(|p| ready(p)) {
                        let node = p
                            .spec
                            .as_ref()
                            .and_then(|s| s.node_name.clone())
                            .unwrap_or_default();
                        return Ok((p.metadata.name.clone().unwrap_or_default(), node));
                    }
                    if let Some(p) = new.first() {
                        last = state_of(p);
                    }
                }
                Err(e) => last = format!("listing its pods failed: {e}"),
            }
            if started.elapsed() >= self.timeout {
                return Err(format!(
                    "the new pod was not Ready within {} s (--surge-timeout): {last}",
                    self.timeout.as_secs()
                ));
            }
            if !self.gate.open() {
                return Err(format!(
                    "shutting down or leadership lost before the new pod was Ready: {last}"
                ));
            }
            tokio::select! {
                _ = tokio::time::sleep(self.poll) => {}
                _ = self.gate.closed() => {}
            }
        }
    }

    /// Scales the Deployment from `from` to `to` replicas through its scale subresource, with
    /// the scale's resourceVersion as a precondition; a conflict is read again (up to three
    /// times) while the replicas are still `from`.
    async fn scale(&self, ns: &str, name: &str, from: i32, to: i32) -> Result<(), String> {
        let deployments = self.deployments(ns);
        for _ in 0..3 {
            self.api.throttle().await;
            let scale = deployments
                .get_scale(name)
                .await
                .map_err(|e| e.to_string())?;
            let now = scale.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
            if now != from {
                return Err(format!(
                    "its replicas are {now}, not {from}: another writer changed them"
                ));
            }
            let next = Scale {
                metadata: scale.metadata.clone(),
                spec: Some(k8s_openapi::api::autoscaling::v1::ScaleSpec { replicas: Some(to) }),
                status: None,
            };
            self.api.throttle().await;
            match deployments
                .replace_scale(name, &PostParams::default(), &next)
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(e.to_string()),
            }
        }
        Err("its scale kept changing under concurrent writers (409 three times)".into())
    }

    /// Waits until the victim is deleted (gone, replaced or terminating).
    async fn victim_goes(&self, ns: &str, name: &str, uid: &str) -> bool {
        let started = Instant::now();
        loop {
            self.api.throttle().await;
            match self.pods(ns).get_opt(name).await {
                Ok(None) => return true,
                Ok(Some(p))
                    if p.metadata.uid.as_deref() != Some(uid)
                        || p.metadata.deletion_timestamp.is_some() =>
                {
                    return true
                }
                _ => {}
            }
            if started.elapsed() >= VICTIM_WAIT {
                return false;
            }
            tokio::time::sleep(self.poll).await;
        }
    }

    /// Undoes a surge whose new pod did not become Ready: the Deployment back to `replicas`,
    /// the victim's mark off, the Deployment's mark removed.
    async fn roll_back(
        &self,
        ns: &str,
        deployment: &str,
        replicas: i32,
        victim: &Victim<'_>,
        cost: Option<&str>,
        why: String,
    ) -> SurgeEnd {
        let scaled = self.scale(ns, deployment, replicas + 1, replicas).await;
        self.restore_victim(ns, victim.name, victim.uid, cost).await;
        self.unmark(ns, deployment).await;
        match scaled {
            Ok(()) => SurgeEnd::RolledBack(why),
            Err(e) => SurgeEnd::Failed(format!(
                "{why}; rolling back, scaling Deployment {ns}/{deployment} to {replicas} failed: {e}"
            )),
        }
    }

    /// Puts back the victim's own deletion cost (or none), if it is still the same pod.
    async fn restore_victim(&self, ns: &str, name: &str, uid: &str, cost: Option<&str>) {
        let patch = serde_json::json!({
            "metadata": {
                "uid": uid,
                "annotations": { POD_DELETION_COST_ANNOTATION: cost },
            }
        });
        self.api.throttle().await;
        match self
            .pods(ns)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            // Gone or replaced: nothing to put back.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => {
                tracing::warn!(pod = %format!("{ns}/{name}"), error = %e, "taking the surge's deletion cost off the pod failed")
            }
        }
    }

    /// Removes the surge's mark from the Deployment.
    async fn unmark(&self, ns: &str, deployment: &str) {
        let patch = serde_json::json!({
            "metadata": { "annotations": { SURGE_IN_FLIGHT_ANNOTATION: null } }
        });
        self.api.throttle().await;
        if let Err(e) = self
            .deployments(ns)
            .patch(deployment, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::error!(deployment = %format!("{ns}/{deployment}"), error = %e, "removing the surge's mark failed; the next run removes it after its deadline");
        }
    }

    /// Completes or rolls back every surge whose mark's deadline passed (its descheduler died
    /// mid-surge), among `marked` (`(namespace, name)` of Deployments carrying a mark), at
    /// `now`. Returns what was done to each, for logs, metrics and events.
    pub async fn recover(&self, marked: &[(String, String)], now: i64) -> Vec<Recovery> {
        let mut done = Vec::new();
        for (ns, name) in marked {
            self.api.throttle().await;
            let d = match self.deployments(ns).get_opt(name).await {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(deployment = %format!("{ns}/{name}"), error = %e, "reading a Deployment with a surge in flight failed");
                    continue;
                }
            };
            let Some(text) = annotation(&d.metadata, SURGE_IN_FLIGHT_ANNOTATION) else {
                continue;
            };
            let Some(mark) = SurgeMark::decode(text) else {
                tracing::error!(deployment = %format!("{ns}/{name}"), annotation = SURGE_IN_FLIGHT_ANNOTATION, value = text, "the surge's mark cannot be read; it is left as it is and the Deployment is not surged while it is there (remove the annotation once its replicas are right)");
                continue;
            };
            if now < mark.deadline {
                continue;
            }
            let replicas = d.spec.replicas.unwrap_or(1);
            let action = recovery_action(&mark, replicas);
            let scaled = match action {
                RecoveryAction::ScaleBack => {
                    self.scale(ns, name, mark.replicas + 1, mark.replicas).await
                }
                RecoveryAction::CleanUp => Ok(()),
                RecoveryAction::LeaveReplicas => Err(format!(
                    "its replicas are {replicas}, neither {} nor {}: another writer changed them, and they are left as they are",
                    mark.replicas,
                    mark.replicas + 1
                )),
            };
            let victim_went = self
                .victim_goes_now(ns, &mark.victim, &mark.victim_uid)
                .await;
            if !victim_went {
                self.restore_victim(ns, &mark.victim, &mark.victim_uid, mark.cost.as_deref())
                    .await;
            }
            self.unmark(ns, name).await;
            done.push(Recovery {
                namespace: ns.clone(),
                deployment: name.clone(),
                replicas: mark.replicas,
                action,
                problem: scaled.err(),
            });
        }
        done
    }

    /// Whether the victim is gone or going now (after a scale-back, it may take a moment:
    /// waited for as after a surge when the Deployment was scaled back).
    async fn victim_goes_now(&self, ns: &str, name: &str, uid: &str) -> bool {
        self.api.throttle().await;
        match self.pods(ns).get_opt(name).await {
            Ok(None) => true,
            Ok(Some(p)) => {
                p.metadata.uid.as_deref() != Some(uid) || p.metadata.deletion_timestamp.is_some()
            }
            Err(_) => false,
        }
    }
}

/// What a run does with a surge its descheduler left in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryAction {
    /// One replica up: scaled back to the mark's replicas (the victim goes if the new pod is
    /// Ready, else the new pod does).
    ScaleBack,
    /// Replicas already back: only the marks are removed.
    CleanUp,
    /// Replicas changed by someone else: left as they are, the marks removed.
    LeaveReplicas,
}

/// [`RecoveryAction`] for a mark and the Deployment's replicas now.
pub fn recovery_action(mark: &SurgeMark, replicas: i32) -> RecoveryAction {
    if replicas == mark.replicas + 1 {
        RecoveryAction::ScaleBack
    } else if replicas == mark.replicas {
        RecoveryAction::CleanUp
    } else {
        RecoveryAction::LeaveReplicas
    }
}

/// What [`Surger::recover`] did to one Deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    pub namespace: String,
    pub deployment: String,
    /// The replicas before the surge, which the Deployment is brought back to.
    pub replicas: i32,
    pub action: RecoveryAction,
    /// What went wrong, if anything.
    pub problem: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(yaml: &str) -> Deployment {
        serde_saphyr::from_str(yaml).unwrap()
    }

    const STEADY: &str = "
metadata: {name: web, generation: 3}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
    matchExpressions:
    - {key: tier, operator: In, values: [a, b]}
    - {key: canary, operator: DoesNotExist}
  template: {}
status: {observedGeneration: 3, replicas: 2, updatedReplicas: 2, availableReplicas: 2}
";

    #[test]
    fn a_steady_deployment_may_surge_and_its_pods_are_listed_by_its_selector() {
        let d = deployment(STEADY);
        assert_eq!(refusal(&d), None);
        assert_eq!(
            selector(&d).as_deref(),
            Some("app=web,tier in (a,b),!canary")
        );
    }

    #[test]
    fn a_paused_rolling_or_marked_deployment_may_not() {
        let paused = deployment(&STEADY.replace(
            "replicas: 2\n  selector",
            "replicas: 2\n  paused: true\n  selector",
        ));
        assert!(refusal(&paused).unwrap().contains("paused"));
        let unobserved =
            deployment(&STEADY.replace("observedGeneration: 3", "observedGeneration: 2"));
        assert!(refusal(&unobserved).unwrap().contains("rollout"));
        let old_left = deployment(&STEADY.replace(
            "status: {observedGeneration: 3, replicas: 2",
            "status: {observedGeneration: 3, replicas: 3",
        ));
        assert!(refusal(&old_left).unwrap().contains("3 in all"));
        let marked = deployment(&STEADY.replace(
            "metadata: {name: web, generation: 3}",
            "metadata: {name: web, generation: 3, annotations: {descheduler.alpha.kubernetes.io/surge-in-flight: '{}'}}",
        ));
        assert!(refusal(&marked).unwrap().contains("in flight"));
    }

    #[test]
    fn a_surge_left_in_flight_is_scaled_back_only_while_it_is_one_up() {
        let mark = SurgeMark {
            replicas: 2,
            victim_uid: "u".into(),
            victim: "web-1".into(),
            deadline: 0,
            cost: None,
        };
        assert_eq!(recovery_action(&mark, 3), RecoveryAction::ScaleBack);
        assert_eq!(recovery_action(&mark, 2), RecoveryAction::CleanUp);
        assert_eq!(recovery_action(&mark, 5), RecoveryAction::LeaveReplicas);
        assert_eq!(recovery_action(&mark, 1), RecoveryAction::LeaveReplicas);
    }

    #[test]
    fn a_new_pod_not_ready_says_what_it_is_doing() {
        let pending: Pod = serde_saphyr::from_str(
            "metadata: {name: web-x}\nspec: {containers: []}\nstatus: {phase: Pending, conditions: [{type: PodScheduled, status: 'False', message: '0/3 nodes are available: 3 Insufficient cpu.'}]}",
        )
        .unwrap();
        assert!(!ready(&pending));
        assert_eq!(
            state_of(&pending),
            "its new pod web-x is not scheduled: 0/3 nodes are available: 3 Insufficient cpu."
        );
        let running: Pod = serde_saphyr::from_str(
            "metadata: {name: web-x}\nspec: {nodeName: n1, containers: []}\nstatus: {phase: Running, conditions: [{type: Ready, status: 'True'}]}",
        )
        .unwrap();
        assert!(ready(&running));
    }
}
