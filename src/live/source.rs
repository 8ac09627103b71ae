//! Reading the cluster. Every resource is listed with one request, served by the API server
//! from its watch cache (a list without `limit` nor `resourceVersion` is a consistent read
//! there), and its response bytes go straight into the compact model as they arrive
//! ([`ListDecoder`], the reader of snapshot files): no API objects are built, and nothing is
//! written only to be read again. A resource whose whole list does not come within the
//! request's deadline (or the API server's own, 504) is listed in pages from then on
//! ([`list`]): each page a short request, the pages joined into one list. One-shot mode lists everything once, all resources at
//! once; continuous mode lists each resource, then keeps it current from its watch (added,
//! modified, deleted, bookmarks; listed again when the watch's version expired, 410 Gone: the
//! protocol of [`Reflector`]),
//! each event decoded into the same compact shapes ([`decode_event`]) and taken into one
//! [`ClusterStore`]. A cycle waits until every resource has had a complete list: it never
//! plans on a partly filled cache.
//!
//! PodGroups are custom resources, or (Kubernetes' own, `scheduling.k8s.io`) served only
//! with the `GenericWorkload` feature gate and the API version enabled: where a gang
//! scheduler's CRD is not installed or the API is not served (the API answers 404) there are
//! none of its kind, which is not an error; a 403 is an error that names the RBAC rule to
//! add (a gang whose PodGroup cannot be read would otherwise be protected whole, silently).
//! Kubernetes' PodGroups are read from `v1beta1`, or from `v1alpha3` where only that is
//! served.
//!
//! Deployments, HorizontalPodAutoscalers (`autoscaling/v2`) and ResourceQuotas are read only
//! when asked for (`workloads`: a profile moves pods by surge), so that a policy that does
//! not surge reads nothing more and needs no more RBAC; when asked for they are required, a
//! 403 an error that names the rule (the surge component of the manifests).

use super::changes::{Signal, WorkWatch};
use super::client::ApiClient;
use super::failure::{status, ReadFailure};
use super::reflector::{self, Input, Reflector, Request};
use super::LiveError;
use crate::snapshot::decode::proto;
use crate::snapshot::decode::stream::{
    decode_event, DecodedList, EventType, ListReader, ObjectType,
};
use crate::snapshot::decode::{join, SnapshotError};
use crate::snapshot::store::{Change, ClusterStore, Resource};
use crate::snapshot::{ClusterSnapshot, GangKind, SnapshotParts};
use http_body_util::BodyExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// How one resource is read from the API.
#[derive(Debug, Clone)]
struct ResourceApi {
    resource: Resource,
    /// The collection's path, such as `/api/v1/pods`.
    path: &'static str,
    /// The type of its items (typed lists leave it out).
    object: ObjectType,
    /// A label selector (nodes: the policy's nodeSelector).
    selector: String,
    /// A custom resource whose CRD may be absent (404: none of them).
    optional: bool,
    /// The versions of the resource to read, each a collection path and its items'
    /// `apiVersion`, the first the API serves (a 404 tries the next); empty: only `path`.
    versions: &'static [(&'static str, &'static str)],
    /// Listed in pages: a whole list did not come in time ([`list`]).
    paged: bool,
}

impl ResourceApi {
    /// The resources [`Resource::read`] names, each as it is read from the API.
    fn all(node_selector: &str, workloads: bool) -> Vec<ResourceApi> {
        let plain = |resource, path, kind, api_version| ResourceApi {
            resource,
            path,
            object: ObjectType { kind, api_version },
            selector: String::new(),
            optional: false,
            versions: &[],
            paged: false,
        };
        let mut nodes = plain(Resource::Nodes, "/api/v1/nodes", "Node", "v1");
        nodes.selector = node_selector.trim().to_string();
        let group = |kind: GangKind, path, api_version| ResourceApi {
            resource: Resource::PodGroups(kind),
            path,
            object: ObjectType {
                kind: "PodGroup",
                api_version,
            },
            selector: String::new(),
            optional: true,
            versions: &[],
            paged: false,
        };
        vec![
            nodes,
            plain(Resource::Pods, "/api/v1/pods", "Pod", "v1"),
            plain(
                Resource::PodDisruptionBudgets,
                "/apis/policy/v1/poddisruptionbudgets",
                "PodDisruptionBudget",
                "policy/v1",
            ),
            plain(
                Resource::Namespaces,
                "/api/v1/namespaces",
                "Namespace",
                "v1",
            ),
            plain(
                Resource::PriorityClasses,
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                "PriorityClass",
                "scheduling.k8s.io/v1",
            ),
            group(
                GangKind::SchedulerPlugins,
                "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
                "scheduling.x-k8s.io/v1alpha1",
            ),
            group(
                GangKind::Volcano,
                "/apis/scheduling.volcano.sh/v1beta1/podgroups",
                "scheduling.volcano.sh/v1beta1",
            ),
            ResourceApi {
                versions: KUBERNETES_POD_GROUP_VERSIONS,
                ..group(
                    GangKind::Kubernetes,
                    KUBERNETES_POD_GROUP_VERSIONS[0].0,
                    KUBERNETES_POD_GROUP_VERSIONS[0].1,
                )
            },
            plain(
                Resource::Deployments,
                "/apis/apps/v1/deployments",
                "Deployment",
                "apps/v1",
            ),
            plain(
                Resource::HorizontalPodAutoscalers,
                "/apis/autoscaling/v2/horizontalpodautoscalers",
                "HorizontalPodAutoscaler",
                "autoscaling/v2",
            ),
            plain(
                Resource::ResourceQuotas,
                "/api/v1/resourcequotas",
                "ResourceQuota",
                "v1",
            ),
        ]
        .into_iter()
        .filter(|r| workloads || !r.resource.is_workload())
        .collect()
    }

    /// The request's URI with `query` (and the label selector).
    fn uri(&self, query: &[(&str, &str)]) -> String {
        let mut uri = self.path.to_string();
        let mut sep = '?';
        let selector = [("labelSelector", self.selector.as_str())];
        let extra = if self.selector.is_empty() {
            &selector[..0]
        } else {
            &selector[..]
        };
        for (k, v) in query.iter().chain(extra) {
            uri.push(sep);
            sep = '&';
            uri.push_str(k);
            uri.push('=');
            uri.push_str(&encode(v));
        }
        uri
    }

    /// Names the resource in errors.
    fn what(&self) -> &'static str {
        self.resource.name()
    }
}

/// Where Kubernetes' own PodGroups are read: `v1beta1` (Kubernetes 1.37, with
/// `--runtime-config=scheduling.k8s.io/v1beta1=true`), else `v1alpha3`, else `v1alpha2`
/// (Kubernetes 1.36).
const KUBERNETES_POD_GROUP_VERSIONS: &[(&str, &str)] = &[
    (
        "/apis/scheduling.k8s.io/v1beta1/podgroups",
        "scheduling.k8s.io/v1beta1",
    ),
    (
        "/apis/scheduling.k8s.io/v1alpha3/podgroups",
        "scheduling.k8s.io/v1alpha3",
    ),
    (
        "/apis/scheduling.k8s.io/v1alpha2/podgroups",
        "scheduling.k8s.io/v1alpha2",
    ),
];

/// Percent-encodes a query value.
fn encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Sends a GET and returns the response, or the API's error (its Status).
async fn get(
    api: &ApiClient,
    uri: &str,
    accept: &str,
) -> Result<http::Response<kube::client::Body>, kube::Error> {
    api.throttle().await;
    let request = http::Request::get(uri)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::empty())
        .map_err(kube::Error::HttpError)?;
    let response = api.client.send(request).await?;
    api.answered
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u32>().ok());
    let body = response.into_body().collect().await?.to_bytes();
    let answer = if let Some(s) = proto::decode_status(&body) {
        let code = u16::try_from(s.code).unwrap_or(status.as_u16());
        kube::core::Status::failure(&s.message, &s.reason).with_code(code)
    } else {
        let text = String::from_utf8_lossy(&body);
        match serde_json::from_str::<kube::core::Status>(&text) {
            Ok(s) => s,
            // Not every error is a Status: a group that is not served answers a plain
            // "404 page not found".
            Err(_) => kube::core::Status::failure(text.trim(), "").with_code(status.as_u16()),
        }
    };
    Err(kube::Error::Api(
        with_retry_after(answer, retry_after).boxed(),
    ))
}

/// The answer's Status with the wait its `Retry-After` header asked for, where the Status
/// does not say one itself (its `details.retryAfterSeconds`), so that the wait goes with the
/// error to whoever asks again ([`ReadFailure::retry_after`]).
fn with_retry_after(mut status: kube::core::Status, header: Option<u32>) -> kube::core::Status {
    let Some(seconds) = header.filter(|&s| s > 0) else {
        return status;
    };
    let details = status
        .details
        .get_or_insert_with(|| kube::core::response::StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes: Vec::new(),
            retry_after_seconds: 0,
        });
    if details.retry_after_seconds == 0 {
        details.retry_after_seconds = seconds;
    }
    status
}

/// How long reading a list response pauses once it has caught up with the server.
const PATIENCE: Duration = Duration::from_millis(4);

/// Bytes of a response handed to its decoder at a time.
const BATCH: usize = 1 << 20;

/// Items asked for per page when a resource is listed in pages.
const PAGE: &str = "500";

/// Lists one resource: in one request; or, once a whole list has not come within the
/// request's deadline (or the API server's own: 504), in pages ([`PAGE`] items each, a
/// request each, every one short), which the resource keeps to from then on. A list slower
/// than a deadline would otherwise fail the same way at every try.
async fn list(api: &ApiClient, r: &mut ResourceApi) -> Result<DecodedList, ReadFailure> {
    if r.paged {
        return list_pages(api, r).await;
    }
    match list_at(api, r, &r.uri(&[]), false).await {
        Err(e) if too_slow(&e, api.answered.load(std::sync::atomic::Ordering::Relaxed)) => {
            tracing::warn!(
                resource = r.what(),
                error = %e.cause(),
                page = PAGE,
                "the whole list did not come in time; listing it in pages from now on"
            );
            r.paged = true;
            list_pages(api, r).await
        }
        other => other,
    }
}

/// Whether a list failed for taking too long while the API server is there: the API
/// server's own timeout (504), an answer that began and then paused past the request's
/// deadline, or no answer within it from a server that has answered other requests
/// (`answered`; a server that answers nothing at all is not asked again in pages, nor one
/// that never began a TLS handshake).
fn too_slow(e: &ReadFailure, answered: bool) -> bool {
    use super::client::RequestError;
    let ReadFailure::Transient { source, .. } = e else {
        return false;
    };
    if status(source) == Some(504) {
        return true;
    }
    let kube::Error::Service(inner) = source else {
        return false;
    };
    match inner.downcast_ref::<RequestError>() {
        Some(RequestError::Stalled { .. }) => true,
        Some(RequestError::NoAnswer { .. }) => answered,
        _ => false,
    }
}

/// Lists one resource page by page (`limit` and `continue`), the pages joined into one list
/// at the version of the first (the API server serves every page of a list from it).
async fn list_pages(api: &ApiClient, r: &ResourceApi) -> Result<DecodedList, ReadFailure> {
    let mut list = list_at(api, r, &r.uri(&[("limit", PAGE)]), true).await?;
    let mut pages = 1;
    while !list.continue_token.is_empty() {
        let token = std::mem::take(&mut list.continue_token);
        let page = list_at(
            api,
            r,
            &r.uri(&[("limit", PAGE), ("continue", &token)]),
            true,
        )
        .await?;
        join(&mut list.parts, page.parts);
        list.continue_token = page.continue_token;
        pages += 1;
    }
    tracing::debug!(resource = r.what(), pages, "listed in pages");
    Ok(list)
}

/// Lists one resource with one request to `uri`, its body decoded on a thread of its own
/// as it arrives (`paged`: a page, which may say there is a next one). Pods and nodes are
/// asked for in the API's protobuf encoding (JSON where the server answers JSON), the
/// other kinds in JSON.
async fn list_at(
    api: &ApiClient,
    r: &ResourceApi,
    uri: &str,
    paged: bool,
) -> Result<DecodedList, ReadFailure> {
    let accept = if api.protobuf && proto::Message::of(r.object).is_some() {
        proto::ACCEPT
    } else {
        "application/json"
    };
    let response = get(api, uri, accept)
        .await
        .map_err(|e| ReadFailure::of(r.resource, e))?;
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    // The body arrives in frames of a few kilobytes; they are copied into batches that go to
    // the decoder's thread (a wake-up per frame would cost more than decoding it). Each frame
    // is let go at once, so the HTTP layer reads the next into the same memory, and the
    // decoder hands each batch back to be filled again: reading a large list reuses a few
    // buffers instead of faulting in fresh memory for every megabyte.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    let (give_back, returned) = std::sync::mpsc::channel::<Vec<u8>>();
    let what = format!("the {} list of {}", r.what(), api.server);
    let object = r.object;
    let decoder = tokio::task::spawn_blocking(move || {
        let mut d = ListReader::new(what, object, &content_type);
        while let Some(mut batch) = rx.blocking_recv() {
            d.push(&batch)?;
            batch.clear();
            // The reader may be gone already (it has sent its last batch).
            let _ = give_back.send(batch);
        }
        d.finish()
    });
    let mut body = response.into_body();
    let mut failed = None;
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        // The API server writes a large list more slowly than it can be read: read on each
        // write and the process wakes up for every few kilobytes. After a frame that had to
        // be waited for, the next waits a little, so the socket's buffer fills meanwhile.
        let asked = tokio::time::Instant::now();
        let frame = body.frame().await;
        if asked.elapsed() > PATIENCE / 8 {
            tokio::time::sleep(PATIENCE).await;
        }
        let done = match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    batch.extend_from_slice(&data);
                }
                false
            }
            Some(Err(e)) => {
                failed = Some(e);
                true
            }
            None => true,
        };
        if (done || batch.len() >= BATCH) && !batch.is_empty() {
            let next = returned
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(BATCH));
            // The decoder stops early only on an error, which it returns.
            if tx.send(std::mem::replace(&mut batch, next)).await.is_err() {
                break;
            }
        }
        if done {
            break;
        }
    }
    drop(tx);
    let decoded = joined(decoder).await;
    match (failed, decoded) {
        (_, Err(e)) if !matches!(e, SnapshotError::Response { .. }) => {
            Err(ReadFailure::decode(r.resource, e))
        }
        (Some(e), _) => Err(ReadFailure::of(r.resource, e)),
        (None, d) => {
            let d = d.map_err(|e| ReadFailure::decode(r.resource, e))?;
            if !paged && !d.continue_token.is_empty() {
                // Not asked for (no limit): a server that pages anyway is not understood.
                return Err(ReadFailure::decode(
                    r.resource,
                    SnapshotError::Response {
                        what: format!("the {} list of {}", r.what(), api.server),
                        message:
                            "the API server answered one page of several without being asked to"
                                .into(),
                    },
                ));
            }
            Ok(d)
        }
    }
}

/// Lists `r` from the first of its versions the API serves ([`ResourceApi::versions`]; a
/// 404 tries the next) and leaves `r` at that version, which its watch then reads. A
/// resource of one version is just listed.
async fn list_served(api: &ApiClient, r: &mut ResourceApi) -> Result<DecodedList, ReadFailure> {
    let versions = r.versions;
    for (i, &(path, api_version)) in versions.iter().enumerate() {
        r.path = path;
        r.object.api_version = api_version;
        match list(api, r).await {
            Err(ReadFailure::NotServed { .. }) if i + 1 < versions.len() => {
                tracing::debug!(
                    resource = r.what(),
                    version = api_version,
                    "not served; trying the next version"
                );
            }
            other => return other,
        }
    }
    list(api, r).await
}

/// Whether `e` leaves an optional resource (a gang scheduler's PodGroups) with none of its
/// objects, and says so: its CRD is not installed (404), or the descheduler may not read
/// it (403; upstream's ClusterRole grants no PodGroups). Either way a pod that names a
/// group is never evicted: a group whose PodGroup was not read has no known minMember.
fn none_of(r: &ResourceApi, e: &ReadFailure) -> bool {
    match (r.optional, e) {
        (true, ReadFailure::NotServed { .. }) => {
            tracing::debug!(
                resource = r.what(),
                "the PodGroup CRD is not installed (or the API not served); no gangs of this kind"
            );
            true
        }
        (true, ReadFailure::Forbidden { .. }) => {
            tracing::warn!(
                resource = r.what(),
                fix = e.fix().unwrap_or_default(),
                "may not read PodGroups: pods that name such a group are not evicted"
            );
            true
        }
        _ => false,
    }
}

/// Tries of a one-shot list when the API server answers that it cannot serve now (429,
/// 500, 502, 503, 504: starting, overloaded, restarting) or cannot be reached: about 15 s of
/// backoff in all, then the run fails.
const LIST_TRIES: u32 = 5;

/// Lists one resource for a one-shot cycle: an absent or unreadable CRD gives none; an API
/// server that cannot answer now is asked again a few times.
async fn list_once(api: &ApiClient, r: &ResourceApi) -> Result<SnapshotParts, LiveError> {
    let mut backoff = Backoff::new();
    let mut tries = 1;
    let mut r = r.clone();
    let r = &mut r;
    loop {
        match list_served(api, r).await {
            Ok(d) => return Ok(d.parts),
            Err(e) if none_of(r, &e) => return Ok(SnapshotParts::default()),
            Err(e) if e.retry_soon() && tries < LIST_TRIES => {
                tracing::warn!(resource = r.what(), error = %e.cause(), attempt = tries, "list failed; trying again");
                tries += 1;
                backoff.wait_at_least(e.retry_after()).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Lists everything once (one-shot mode), every resource at once; with `workloads` (a
/// profile moves pods by surge) the Deployments, HorizontalPodAutoscalers and
/// ResourceQuotas too. Any failed list fails the cycle: nothing is evicted from an
/// incomplete picture.
pub async fn list_snapshot(
    api: &ApiClient,
    node_selector: &str,
    workloads: bool,
) -> Result<ClusterSnapshot, LiveError> {
    // Each list is a task of its own: a response's frames are then read on the runtime's
    // thread that runs its connection, without a wake-up of another thread per frame.
    let mut tasks = AbortOnDrop(
        ResourceApi::all(node_selector, workloads)
            .into_iter()
            .map(|r| {
                let api = api.clone();
                tokio::spawn(async move { list_once(&api, &r).await })
            })
            .collect(),
    );
    let mut parts = SnapshotParts::default();
    for t in tasks.0.iter_mut() {
        let listed = joined(t).await?;
        join(&mut parts, listed);
    }
    parts.check_totals(&[]).map_err(totals_error)?;
    Ok(joined(tokio::task::spawn_blocking(move || {
        ClusterSnapshot::build(parts)
    }))
    .await)
}

/// What a task of the runtime returned; its panic goes on in the caller. A task the runtime
/// cancelled (it is shutting down, after the run ended, and drops the caller next) never
/// returns: a JoinError of a cancellation is no panic to resume, and treating it as one
/// panicked at exit.
async fn joined<T>(
    task: impl std::future::Future<Output = Result<T, tokio::task::JoinError>>,
) -> T {
    match task.await {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => std::future::pending().await,
    }
}

/// Tasks stopped when the one waiting for them is (a list given up on SIGTERM, or one
/// resource's list failed): nothing goes on reading for nobody.
struct AbortOnDrop<T>(Vec<tokio::task::JoinHandle<T>>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// Amounts whose totals the planner cannot count: nothing is planned.
fn totals_error(e: crate::snapshot::TotalTooLarge) -> LiveError {
    LiveError::Decode(crate::snapshot::decode::SnapshotError::Totals {
        what: "the cluster".into(),
        source: e,
    })
}

/// What a resource's reader tells the source.
enum Update {
    Change(Change),
    /// Reading the resource failed (it is retried): why.
    Failed(ReadFailure),
    /// The resource's watch is established: what is known of it is current again.
    Watching(Resource),
}

/// How a watch ended.
enum WatchEnd {
    /// The server closed it (its timeout): watch again from the last version.
    Closed,
    /// The version is too old (410 Gone): list again.
    Expired,
    Failed(ReadFailure),
}

/// A watch's timeout, as client-go's reflectors choose it: between 5 and 10 minutes, so
/// that the watches of many clients do not all end at once.
fn watch_timeout() -> u64 {
    let spread = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| {
            d.subsec_nanos() as u64 ^ u64::from(std::process::id())
        });
    300 + spread % 300
}

/// Watches `r` from `version`, sending each change; tells `reflector` each version read.
async fn watch(
    api: &ApiClient,
    r: &ResourceApi,
    version: &str,
    reflector: &mut Reflector,
    tx: &tokio::sync::mpsc::UnboundedSender<Update>,
) -> WatchEnd {
    let timeout = watch_timeout().to_string();
    let uri = r.uri(&[
        ("watch", "1"),
        ("allowWatchBookmarks", "true"),
        ("resourceVersion", version),
        ("timeoutSeconds", &timeout),
    ]);
    let response = match get(api, &uri, "application/json").await {
        Ok(r) => r,
        Err(e) if status(&e) == Some(410) => return WatchEnd::Expired,
        Err(e) => return WatchEnd::Failed(ReadFailure::of(r.resource, e)),
    };
    if tx.send(Update::Watching(r.resource)).is_err() {
        return WatchEnd::Closed;
    }
    let what = format!("the {} watch of {}", r.what(), api.server);
    let mut body = response.into_body();
    let mut buf: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let data = match frame {
            Ok(frame) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            // A watch cut off (the server went away, a proxy timed out): watch again.
            Err(e) => {
                tracing::debug!(resource = r.what(), error = %e, "watch interrupted");
                return WatchEnd::Closed;
            }
        };
        buf.extend_from_slice(&data);
        let mut start = 0;
        while let Some(nl) = buf[start..].iter().position(|&b| b == b'\n') {
            let line = &buf[start..start + nl];
            start += nl + 1;
            let line = match std::str::from_utf8(line) {
                Ok(l) if l.trim().is_empty() => continue,
                Ok(l) => l,
                Err(e) => {
                    return WatchEnd::Failed(ReadFailure::decode(
                        r.resource,
                        SnapshotError::Response {
                            what,
                            message: format!("a watch event is not UTF-8 text: {e}"),
                        },
                    ))
                }
            };
            let event = match decode_event(&what, r.object, line) {
                Ok(e) => e,
                Err(e) => return WatchEnd::Failed(ReadFailure::decode(r.resource, e)),
            };
            let change = match event.kind {
                EventType::Added | EventType::Modified => event.object.map(Change::Upsert),
                EventType::Deleted => event.object.map(Change::Delete),
                EventType::Bookmark => None,
                EventType::Error => {
                    let status = event.status.unwrap_or_default();
                    if status.code == 410 {
                        return WatchEnd::Expired;
                    }
                    let status = kube::core::Status::failure(&status.message, &status.reason)
                        .with_code(status.code);
                    return WatchEnd::Failed(ReadFailure::of(
                        r.resource,
                        kube::Error::Api(status.boxed()),
                    ));
                }
            };
            reflector.seen(event.resource_version);
            if let Some(c) = change {
                if tx.send(Update::Change(c)).is_err() {
                    return WatchEnd::Closed;
                }
            }
        }
        buf.drain(..start);
    }
    WatchEnd::Closed
}

/// Waits before trying again: 0.5 s, doubling up to 30 s (as the watch protocol does).
struct Backoff(Duration);

impl Backoff {
    fn new() -> Self {
        Backoff(reflector::FIRST_BACKOFF)
    }
    /// Waits the backoff, or as long as the API server asked (`Retry-After`) when longer.
    async fn wait_at_least(&mut self, asked: Option<Duration>) {
        tokio::time::sleep(self.0.max(asked.unwrap_or_default())).await;
        self.0 = (self.0 * 2).min(reflector::MAX_BACKOFF);
    }
}

/// Keeps one resource current: the list and watch protocol of [`Reflector`], its requests
/// made here and what they brought sent to the source.
async fn keep(api: ApiClient, mut r: ResourceApi, tx: tokio::sync::mpsc::UnboundedSender<Update>) {
    let mut reflector = Reflector::new(r.optional);
    let mut step = reflector.start();
    loop {
        if !step.after.is_zero() {
            tokio::time::sleep(step.after).await;
        }
        let (next, failure) = match step.request {
            Request::List => match list_served(&api, &mut r).await {
                Ok(d) => {
                    let listed = Change::Replace(r.resource, d.parts);
                    if tx.send(Update::Change(listed)).is_err() {
                        return;
                    }
                    let version = d.resource_version;
                    (reflector.step(Input::Listed { version }), None)
                }
                Err(e) => {
                    let next = reflector.step(Input::ListFailed(&e));
                    if next.none {
                        none_of(&r, &e);
                        let none = Change::Replace(r.resource, SnapshotParts::default());
                        if tx.send(Update::Change(none)).is_err() {
                            return;
                        }
                    }
                    (next, Some(("list failed; retrying", e)))
                }
            },
            Request::Watch { version } => {
                let opened = std::time::Instant::now();
                match watch(&api, &r, &version, &mut reflector, &tx).await {
                    WatchEnd::Closed if tx.is_closed() => return,
                    WatchEnd::Closed => {
                        let lasted = opened.elapsed();
                        (reflector.step(Input::WatchClosed { lasted }), None)
                    }
                    WatchEnd::Expired => {
                        tracing::info!(
                            resource = r.what(),
                            "watch version expired (410 Gone); listing again"
                        );
                        (reflector.step(Input::WatchExpired), None)
                    }
                    WatchEnd::Failed(e) => (
                        reflector.step(Input::WatchFailed(&e)),
                        Some(("watch failed; retrying", e)),
                    ),
                }
            }
        };
        if let Some((what, e)) = failure.filter(|_| next.report) {
            tracing::warn!(resource = r.what(), error = %e, "{what}");
            if tx.send(Update::Failed(e)).is_err() {
                return;
            }
        }
        step = next;
    }
}

/// The cluster kept current from watches, for continuous mode.
pub struct WatchSource {
    rx: tokio::sync::mpsc::UnboundedReceiver<Update>,
    store: ClusterStore,
    /// Each resource that cannot be read now: since when, and the last failure.
    failures: BTreeMap<Resource, (std::time::Instant, Arc<ReadFailure>)>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The API server, for errors.
    server: String,
    /// `--cycle-on-change`: what the changes taken in mean for a cycle, and what they meant
    /// since it was last asked.
    work: Option<(WorkWatch, Option<Signal>)>,
}

impl WatchSource {
    /// Lists and watches every resource; with `workloads` (a profile moves pods by surge)
    /// the Deployments, HorizontalPodAutoscalers and ResourceQuotas too, and a snapshot
    /// waits for them.
    pub fn start(api: &ApiClient, node_selector: &str, workloads: bool) -> WatchSource {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let tasks = ResourceApi::all(node_selector, workloads)
            .into_iter()
            .map(|r| tokio::spawn(keep(api.clone(), r, tx.clone())))
            .collect();
        WatchSource {
            rx,
            store: ClusterStore::reading(workloads),
            failures: BTreeMap::new(),
            tasks,
            server: api.server.clone(),
            work: None,
        }
    }

    /// Tells what each change means for a cycle (`--cycle-on-change`; see [`WorkWatch`]).
    pub fn watch_for_work(&mut self, watch: WorkWatch) {
        self.work = Some((watch, None));
    }

    /// Takes in the next update from the watches, waiting for it, and says what the changes
    /// taken in since the last call or the last snapshot mean (None: no change to the model,
    /// such as a watch re-established). Never returns if every watch has ended.
    pub async fn next_change(&mut self) -> Option<Signal> {
        match self.rx.recv().await {
            Some(u) => self.take(u),
            None => std::future::pending::<()>().await,
        }
        // Whatever else has arrived meanwhile, in one go.
        while let Ok(u) = self.rx.try_recv() {
            self.take(u);
        }
        self.work.as_mut().and_then(|(_, s)| s.take())
    }

    fn take(&mut self, update: Update) {
        match update {
            Update::Change(c) => {
                if let Change::Replace(r, _) = &c {
                    self.failures.remove(r);
                }
                if let Some((watch, signal)) = &mut self.work {
                    let s = watch.seen(&c, chrono::Utc::now().timestamp());
                    *signal = Some(signal.map_or(s, |old| old.max(s)));
                }
                self.store.apply(c)
            }
            Update::Failed(why) => {
                let r = why.resource();
                let since = self
                    .failures
                    .get(&r)
                    .map_or_else(std::time::Instant::now, |f| f.0);
                self.failures.insert(r, (since, Arc::new(why)));
            }
            Update::Watching(r) => {
                self.failures.remove(&r);
            }
        }
    }

    /// The cluster now: every change received so far taken in, once every resource has
    /// had a complete list (waiting up to `sync_timeout` for that).
    pub async fn snapshot(
        &mut self,
        sync_timeout: Duration,
    ) -> Result<&mut ClusterSnapshot, LiveError> {
        let deadline = tokio::time::Instant::now() + sync_timeout;
        loop {
            while let Ok(u) = self.rx.try_recv() {
                self.take(u);
            }
            let missing = self.store.missing();
            if missing.is_empty() {
                break;
            }
            // A resource refused outright (403) is an error now, not after the timeout.
            if let Some(why) = missing
                .iter()
                .filter_map(|r| self.failures.get(r))
                .map(|f| &f.1)
                .find(|w| matches!(***w, ReadFailure::Forbidden { .. }))
            {
                return Err(LiveError::Forbidden(why.clone()));
            }
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(u)) => self.take(u),
                Ok(None) | Err(_) => {
                    let why: Vec<String> = missing
                        .iter()
                        .map(|r| match self.failures.get(r) {
                            Some((_, w)) => format!("{}: {w}", r.name()),
                            None => format!("{}: no answer yet", r.name()),
                        })
                        .collect();
                    return Err(LiveError::NotSynced {
                        server: self.server.clone(),
                        timeout: sync_timeout,
                        unread: why.join("; "),
                    });
                }
            }
        }
        // A resource whose watch has failed for longer than the sync timeout is stale:
        // nothing is planned from it until it is read again.
        if let Some((r, (since, why))) = self
            .failures
            .iter()
            .find(|(_, (since, _))| since.elapsed() > sync_timeout)
        {
            return Err(LiveError::Stale {
                resource: r.name(),
                seconds: since.elapsed().as_secs(),
                why: why.to_string(),
            });
        }
        // What a cycle planned from this snapshot reads is no news after it.
        if let Some((_, signal)) = &mut self.work {
            *signal = None;
        }
        let changes = self.store.changes();
        let started = std::time::Instant::now();
        let snap = self.store.snapshot();
        snap.check_totals().map_err(totals_error)?;
        tracing::debug!(
            changes,
            seconds = started.elapsed().as_secs_f64(),
            "cluster state taken in"
        );
        Ok(snap)
    }
}

impl Drop for WatchSource {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task the runtime cancelled (as it does at shutdown, with blocking tasks not started
    /// yet) is no panic: waiting for it never returns instead of panicking; a task's own panic
    /// goes on in the caller.
    #[test]
    fn a_cancelled_task_is_waited_for_and_a_panic_goes_on() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let cancelled = tokio::spawn(std::future::pending::<u32>());
            cancelled.abort();
            let waited = tokio::time::timeout(Duration::from_millis(50), joined(cancelled)).await;
            assert!(waited.is_err(), "a cancelled task never returns");
            let done = tokio::spawn(async { 7 });
            assert_eq!(joined(done).await, 7);
            let panicking = tokio::spawn(async { panic!("the decoder's own panic") });
            let resumed = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
                joined::<()>(panicking),
            ))
            .await
            .unwrap_err();
            assert_eq!(
                resumed.downcast_ref::<&str>(),
                Some(&"the decoder's own panic")
            );
        });
    }

    #[test]
    fn a_list_goes_to_pages_only_when_slow_from_a_server_that_is_there() {
        use crate::live::client::RequestError;
        let server: Arc<str> = Arc::from("https://10.0.0.1:6443");
        let request = || "GET /api/v1/pods".to_string();
        let timeout = Duration::from_secs(2);
        let of =
            |e: RequestError| ReadFailure::of(Resource::Pods, kube::Error::Service(Box::new(e)));
        let api = |code: u16| {
            ReadFailure::of(
                Resource::Pods,
                kube::Error::Api(
                    kube::core::Status::failure("slow", "Timeout")
                        .with_code(code)
                        .boxed(),
                ),
            )
        };
        let no_answer = || {
            of(RequestError::NoAnswer {
                server: server.clone(),
                request: request(),
                timeout,
            })
        };
        assert!(
            too_slow(&no_answer(), true),
            "no answer from a server that answers others"
        );
        assert!(
            !too_slow(&no_answer(), false),
            "no answer from a server that answered nothing"
        );
        let stalled = of(RequestError::Stalled {
            server: server.clone(),
            request: request(),
            timeout,
        });
        assert!(
            too_slow(&stalled, false),
            "an answer that began, then paused"
        );
        let no_tls = of(RequestError::NoHandshake {
            server: server.clone(),
            request: request(),
        });
        assert!(!too_slow(&no_tls, true));
        assert!(too_slow(&api(504), false), "the API server's own timeout");
        assert!(!too_slow(&api(503), true));
        assert!(!too_slow(&api(500), true));
    }

    #[test]
    fn the_wait_a_retry_after_header_asks_for_goes_with_the_error() {
        let plain = || kube::core::Status::failure("slow down", "TooManyRequests").with_code(429);
        let s = with_retry_after(plain(), Some(4));
        assert_eq!(s.details.as_ref().map(|d| d.retry_after_seconds), Some(4));
        // No header, or 0: nothing added.
        assert!(with_retry_after(plain(), None).details.is_none());
        assert!(with_retry_after(plain(), Some(0)).details.is_none());
        // The Status's own wait wins over the header's.
        let own = with_retry_after(with_retry_after(plain(), Some(9)), Some(4));
        assert_eq!(own.details.map(|d| d.retry_after_seconds), Some(9));
        let failure = ReadFailure::of(
            Resource::Pods,
            kube::Error::Api(with_retry_after(plain(), Some(4)).boxed()),
        );
        assert_eq!(failure.retry_after(), Some(Duration::from_secs(4)));
    }

    #[test]
    fn uris_carry_the_selector_encoded() {
        let all = ResourceApi::all("kubernetes.io/os=linux,tier in (a,b)", false);
        assert_eq!(
            all[0].uri(&[("watch", "1")]),
            "/api/v1/nodes?watch=1&labelSelector=kubernetes.io%2Fos%3Dlinux%2Ctier%20in%20%28a%2Cb%29"
        );
        assert_eq!(all[1].uri(&[]), "/api/v1/pods");
        let read: Vec<Resource> = all.iter().map(|r| r.resource).collect();
        assert_eq!(read, Resource::read(false).collect::<Vec<_>>());
        assert!(read.iter().all(|r| !r.is_workload()));
    }

    #[test]
    fn the_workloads_are_read_only_when_asked_for() {
        let all = ResourceApi::all("", true);
        let read: Vec<Resource> = all.iter().map(|r| r.resource).collect();
        assert_eq!(read, Resource::ALL);
        let paths: Vec<&str> = all
            .iter()
            .filter(|r| r.resource.is_workload())
            .map(|r| r.path)
            .collect();
        assert_eq!(
            paths,
            [
                "/apis/apps/v1/deployments",
                "/apis/autoscaling/v2/horizontalpodautoscalers",
                "/api/v1/resourcequotas"
            ]
        );
        // Required, not optional: a refusal is an error, never read as none.
        assert!(all
            .iter()
            .filter(|r| r.resource.is_workload())
            .all(|r| !r.optional));
    }
}
