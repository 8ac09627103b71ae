//! Evictions in the background (upstream's alpha feature gate `EvictionsInBackground`), as
//! upstream's `evictionRequestsCache` tracks them: a pod annotated
//! `descheduler.alpha.kubernetes.io/request-evict-only` is only asked to go; whoever answers
//! the request (KubeVirt's webhook, which live-migrates the VM) carries the eviction out in
//! the background and marks the pod `descheduler.alpha.kubernetes.io/eviction-in-progress`.
//! Until the pod goes, its eviction is in progress: it counts against the limits per node,
//! per namespace and per cycle, and is not requested again.
//!
//! A pure step function over the tracked evictions, given each cycle's snapshot and `now`:
//!
//! - [`BackgroundEvictions::assume`]: the API answered a request as an eviction in the
//!   background (HTTP 429 "Eviction triggered evacuation"): the eviction is assumed in
//!   progress from `now`.
//! - [`BackgroundEvictions::observe`], at the start of each cycle, as upstream's pod informer:
//!   a tracked pod gone from the cluster (or replaced), finished, or whose
//!   `request-evict-only` annotation is gone is no longer tracked; one whose
//!   `eviction-in-progress` annotation was seen and is gone again is no longer tracked (the
//!   eviction was cancelled or ended, so it may be requested again); an assumed eviction
//!   older than the timeout (upstream's 10 minutes) is dropped; and every running pod with
//!   both annotations is tracked (an eviction in progress this process did not request, or
//!   requested before it restarted).

use crate::snapshot::{ClusterSnapshot, Phase, PodId};
use std::collections::BTreeMap;

/// Upstream's timeout of an assumed eviction in the background (`assumedEvictionRequestTimeoutSeconds`).
pub const ASSUMED_TIMEOUT_SECONDS: i64 = 10 * 60;

/// One tracked eviction in the background.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InBackground {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The node the pod runs on.
    pub node: String,
    /// The profile and plugin that requested it (None: found in progress).
    pub requested_by: Option<(String, &'static str)>,
    /// Unix seconds the API answered the request (None: found in progress by its annotation).
    pub assumed_at: Option<i64>,
    /// Whether the pod was seen with `eviction-in-progress`.
    pub seen_in_progress: bool,
}

/// Why a tracked eviction in the background is no longer tracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The pod is gone (or replaced by another of its name): the eviction is done.
    PodGone,
    /// The pod finished (Succeeded or Failed).
    Finished,
    /// `request-evict-only` was removed from the pod.
    NoLongerRequestEvictOnly,
    /// `eviction-in-progress` was removed from the pod: cancelled or restarted; the eviction
    /// may be requested again.
    NoLongerInProgress,
    /// Assumed, and older than the timeout: the eviction may be requested again.
    TimedOut,
}

impl Ended {
    /// What ended it, for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::PodGone => "pod gone",
            Ended::Finished => "pod finished",
            Ended::NoLongerRequestEvictOnly => "request-evict-only annotation removed",
            Ended::NoLongerInProgress => "eviction-in-progress annotation removed",
            Ended::TimedOut => "assumed eviction timed out",
        }
    }
}

/// What [`BackgroundEvictions::observe`] found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// The pods of the snapshot whose eviction in the background is in progress, for
    /// [`crate::plan::CycleMemory::in_background`].
    pub in_progress: Vec<PodId>,
    /// The evictions found in progress by their annotation that were not tracked.
    pub found: Vec<String>,
    /// The evictions no longer tracked, and why.
    pub ended: Vec<(InBackground, Ended)>,
}

/// The evictions in the background in progress, by pod UID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundEvictions {
    /// How long an assumed eviction stays in progress (seconds).
    pub timeout_seconds: i64,
    tracked: BTreeMap<String, InBackground>,
}

impl Default for BackgroundEvictions {
    fn default() -> Self {
        BackgroundEvictions::new(ASSUMED_TIMEOUT_SECONDS)
    }
}

impl BackgroundEvictions {
    /// None tracked; assumed evictions time out after `timeout_seconds`.
    pub fn new(timeout_seconds: i64) -> BackgroundEvictions {
        BackgroundEvictions {
            timeout_seconds,
            tracked: BTreeMap::new(),
        }
    }

    /// The tracked evictions, by pod UID.
    pub fn tracked(&self) -> &BTreeMap<String, InBackground> {
        &self.tracked
    }

    /// The API answered the request to evict `pod` as an eviction in the background, at
    /// `now`: assumed in progress. One tracked already (found by its annotation) becomes
    /// assumed from now, as upstream's `assumePod`; one assumed already stays as it is.
    pub fn assume(
        &mut self,
        snap: &ClusterSnapshot,
        pod: PodId,
        profile: &str,
        plugin: &'static str,
        now: i64,
    ) {
        let p = snap.pod(pod);
        let node = snap
            .pod_node(pod)
            .map(|n| snap.node(n).name.to_string())
            .unwrap_or_default();
        let entry = self
            .tracked
            .entry(p.uid.to_string())
            .or_insert_with(|| InBackground {
                namespace: p.namespace.to_string(),
                name: p.name.to_string(),
                node,
                requested_by: None,
                assumed_at: None,
                seen_in_progress: false,
            });
        if entry.assumed_at.is_none() {
            entry.assumed_at = Some(now);
            entry.requested_by = Some((profile.to_string(), plugin));
        }
    }

    /// Brings the tracking up to date with the cluster as `snap` shows it at `now` (see the
    /// module's documentation); the pods in progress, what was found and what ended.
    pub fn observe(&mut self, snap: &ClusterSnapshot, now: i64) -> Observed {
        let mut out = Observed::default();
        let mut seen: BTreeMap<&str, PodId> = BTreeMap::new();
        for id in snap.pod_ids() {
            let p = snap.pod(id);
            if self.tracked.contains_key(&*p.uid)
                || (p.has_request_evict_only_annotation && p.has_eviction_in_progress_annotation)
            {
                seen.insert(&p.uid, id);
            }
        }
        let uids: Vec<String> = self.tracked.keys().cloned().collect();
        for uid in uids {
            let entry = self.tracked.get_mut(&uid).expect("tracked");
            let ended = match seen.get(uid.as_str()) {
                None => Some(Ended::PodGone),
                Some(&id) => {
                    let p = snap.pod(id);
                    if matches!(p.phase, Phase::Succeeded | Phase::Failed) {
                        Some(Ended::Finished)
                    } else if !p.has_request_evict_only_annotation {
                        Some(Ended::NoLongerRequestEvictOnly)
                    } else if !p.has_eviction_in_progress_annotation && entry.seen_in_progress {
                        Some(Ended::NoLongerInProgress)
                    } else {
                        entry.seen_in_progress |= p.has_eviction_in_progress_annotation;
                        entry
                            .assumed_at
                            .filter(|at| now - at > self.timeout_seconds)
                            .map(|_| Ended::TimedOut)
                    }
                }
            };
            if let Some(why) = ended {
                let entry = self.tracked.remove(&uid).expect("tracked");
                out.ended.push((entry, why));
            }
        }
        // Found in progress by the annotations (upstream's informer adds them); one whose
        // assumed eviction just timed out with its annotations still on is taken up again, as
        // upstream's informer takes it up at the pod's next update.
        for (&uid, &id) in &seen {
            let p = snap.pod(id);
            if self.tracked.contains_key(uid)
                || !(p.has_request_evict_only_annotation && p.has_eviction_in_progress_annotation)
                || matches!(p.phase, Phase::Succeeded | Phase::Failed)
            {
                continue;
            }
            let node = snap
                .pod_node(id)
                .map(|n| snap.node(n).name.to_string())
                .unwrap_or_default();
            self.tracked.insert(
                uid.to_string(),
                InBackground {
                    namespace: p.namespace.to_string(),
                    name: p.name.to_string(),
                    node,
                    requested_by: None,
                    assumed_at: None,
                    seen_in_progress: true,
                },
            );
            out.found.push(p.key());
        }
        out.in_progress = self
            .tracked
            .keys()
            .filter_map(|uid| seen.get(uid.as_str()).copied())
            .collect();
        out
    }
}

#[cfg(test)]
mod tests;
