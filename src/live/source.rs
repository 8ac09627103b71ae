//! Cluster sources for live mode. One-shot mode lists nodes, pods, PDBs, namespaces,
//! priority classes and the PodGroups of both gang schedulers (paginated); continuous mode
//! keeps watch caches (kube's reflectors) and builds each cycle's snapshot from them without
//! listing again. Both hand the objects to the same decoder that reads snapshot files, so live
//! and offline plans agree.
//!
//! PodGroups are custom resources: where a gang scheduler's CRD is not installed (the API
//! answers 404) there are none of its kind, which is not an error; a 403 is an error that
//! names the RBAC rule to add (a gang whose PodGroup cannot be read would otherwise be
//! protected whole, silently).

use super::client::ApiClient;
use super::LiveError;
use crate::snapshot::{decode, ClusterSnapshot};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, TypeMeta};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

const PAGE: u32 = 500;

/// Serializes objects of several kinds into one `kind: List` document for the decoder.
#[derive(Default)]
struct ListWriter {
    buf: Vec<u8>,
    count: usize,
}

impl ListWriter {
    fn new() -> Self {
        let mut buf = Vec::with_capacity(1 << 20);
        buf.extend_from_slice(br#"{"apiVersion":"v1","kind":"List","items":["#);
        ListWriter { buf, count: 0 }
    }

    fn push<T: Serialize>(&mut self, obj: &T) {
        if self.count > 0 {
            self.buf.push(b',');
        }
        serde_json::to_writer(&mut self.buf, obj).expect("API objects serialize");
        self.count += 1;
    }

    fn finish(mut self) -> Result<ClusterSnapshot, LiveError> {
        self.buf.extend_from_slice(b"]}");
        Ok(decode::load_bytes("cluster", &self.buf)?)
    }
}

async fn list_all<K>(
    api: &ApiClient,
    params: &ListParams,
    what: &'static str,
) -> Result<Vec<K>, LiveError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    list_pages(api, Api::all(api.client.clone()), params)
        .await
        .map_err(|source| LiveError::List { what, source })
}

async fn list_pages<K>(
    api: &ApiClient,
    all: Api<K>,
    params: &ListParams,
) -> Result<Vec<K>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        api.throttle().await;
        let mut p = params.clone().limit(PAGE);
        if let Some(t) = &token {
            p = p.continue_token(t);
        }
        let list = all.list(&p).await?;
        out.extend(list.items);
        match list.metadata.continue_ {
            Some(t) if !t.is_empty() => token = Some(t),
            _ => break,
        }
    }
    Ok(out)
}

fn node_params(node_selector: &str) -> ListParams {
    let p = ListParams::default();
    if node_selector.trim().is_empty() {
        p
    } else {
        p.labels(node_selector)
    }
}

/// One gang scheduler's PodGroup API.
struct PodGroupApi {
    group: &'static str,
    version: &'static str,
    /// What listing it is called in errors.
    what: &'static str,
    /// The same, when the API refuses (403): the RBAC rule to add.
    forbidden: &'static str,
}

const POD_GROUP_APIS: [PodGroupApi; 2] = [
    PodGroupApi {
        group: "scheduling.x-k8s.io",
        version: "v1alpha1",
        what: "podgroups.scheduling.x-k8s.io",
        forbidden: "podgroups.scheduling.x-k8s.io (forbidden: give the descheduler's ClusterRole the rule {apiGroups: [scheduling.x-k8s.io], resources: [podgroups], verbs: [get, list, watch]}, as in manifests/base/clusterrole.yaml)",
    },
    PodGroupApi {
        group: "scheduling.volcano.sh",
        version: "v1beta1",
        what: "podgroups.scheduling.volcano.sh",
        forbidden: "podgroups.scheduling.volcano.sh (forbidden: give the descheduler's ClusterRole the rule {apiGroups: [scheduling.volcano.sh], resources: [podgroups], verbs: [get, list, watch]}, as in manifests/base/clusterrole.yaml)",
    },
];

impl PodGroupApi {
    fn resource(&self) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group, self.version, "PodGroup"),
            "podgroups",
        )
    }

    fn api(&self, client: &kube::Client) -> Api<DynamicObject> {
        Api::all_with(client.clone(), &self.resource())
    }

    fn type_meta(&self) -> TypeMeta {
        TypeMeta {
            api_version: format!("{}/{}", self.group, self.version),
            kind: "PodGroup".into(),
        }
    }
}

/// 404 or 403 from the API. (An API group that is not served answers a plain-text
/// "404 page not found", which carries the code but not the reason.)
fn api_status(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) if s.code == 404 || s.is_not_found() => Some(404),
        kube::Error::Api(s) if s.code == 403 || s.is_forbidden() => Some(403),
        _ => None,
    }
}

/// Lists one kind of PodGroup; none when its CRD is not installed.
async fn list_pod_groups(
    api: &ApiClient,
    pg: &PodGroupApi,
) -> Result<Vec<DynamicObject>, LiveError> {
    match list_pages(api, pg.api(&api.client), &ListParams::default()).await {
        Ok(mut items) => {
            // Items of a list may come without their type; the decoder needs it.
            for o in &mut items {
                o.types.get_or_insert_with(|| pg.type_meta());
            }
            Ok(items)
        }
        Err(e) if api_status(&e) == Some(404) => {
            tracing::debug!(
                resource = pg.what,
                "the PodGroup CRD is not installed; no gangs of this kind"
            );
            Ok(Vec::new())
        }
        Err(source) if api_status(&source) == Some(403) => Err(LiveError::List {
            what: pg.forbidden,
            source,
        }),
        Err(source) => Err(LiveError::List {
            what: pg.what,
            source,
        }),
    }
}

/// Lists everything once (one-shot mode). Any failed list fails the cycle: nothing is
/// evicted from an incomplete picture.
pub async fn list_snapshot(
    api: &ApiClient,
    node_selector: &str,
) -> Result<ClusterSnapshot, LiveError> {
    let all = ListParams::default();
    let nodes: Vec<Node> = list_all(api, &node_params(node_selector), "nodes").await?;
    let pods: Vec<Pod> = list_all(api, &all, "pods").await?;
    let pdbs: Vec<PodDisruptionBudget> = list_all(api, &all, "poddisruptionbudgets").await?;
    let namespaces: Vec<Namespace> = list_all(api, &all, "namespaces").await?;
    let pcs: Vec<PriorityClass> = list_all(api, &all, "priorityclasses").await?;
    let mut groups = Vec::new();
    for pg in &POD_GROUP_APIS {
        groups.extend(list_pod_groups(api, pg).await?);
    }
    let mut w = ListWriter::new();
    nodes.iter().for_each(|o| w.push(o));
    pods.iter().for_each(|o| w.push(o));
    pdbs.iter().for_each(|o| w.push(o));
    namespaces.iter().for_each(|o| w.push(o));
    pcs.iter().for_each(|o| w.push(o));
    groups.iter().for_each(|o| w.push(o));
    w.finish()
}

/// Watch caches for continuous mode.
pub struct WatchSource {
    nodes: Store<Node>,
    pods: Store<Pod>,
    pdbs: Store<PodDisruptionBudget>,
    namespaces: Store<Namespace>,
    priority_classes: Store<PriorityClass>,
    /// Boxed: the source lives in an enum beside a variant with no data.
    pod_groups: Box<PodGroupCaches>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

struct PodGroupCaches {
    caches: Vec<PodGroupCache>,
    /// For the list that gives a refused PodGroup watch's error.
    api: ApiClient,
}

/// Whether a PodGroup CRD is served, as the watch last saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CrdState {
    /// Nothing heard yet.
    Unknown,
    Present,
    /// 404: the CRD is not installed; no PodGroups of this kind.
    Absent,
    /// 403: RBAC does not allow reading it.
    Forbidden,
}

/// A watch cache for one kind of PodGroup, which may not exist in the cluster.
struct PodGroupCache {
    api: &'static PodGroupApi,
    store: Store<DynamicObject>,
    state: tokio::sync::watch::Receiver<CrdState>,
}

fn spawn_pod_group_cache(
    client: kube::Client,
    pg: &'static PodGroupApi,
) -> (PodGroupCache, tokio::task::JoinHandle<()>) {
    let writer = reflector::store::Writer::<DynamicObject>::new(pg.resource());
    let store = writer.as_reader();
    let (tx, rx) = tokio::sync::watch::channel(CrdState::Unknown);
    let stream = reflector::reflector(writer, watcher(pg.api(&client), watcher::Config::default()))
        .default_backoff();
    let task = tokio::spawn(async move {
        let tx = &tx;
        stream
            .for_each(|event| async move {
                let state = match &event {
                    // `Init` comes before the list is tried; anything after it is an answer.
                    Ok(watcher::Event::Init) => None,
                    Ok(_) => Some(CrdState::Present),
                    Err(
                        watcher::Error::InitialListFailed(e)
                        | watcher::Error::WatchStartFailed(e)
                        | watcher::Error::WatchFailed(e),
                    ) => match api_status(e) {
                        Some(404) => Some(CrdState::Absent),
                        Some(403) => Some(CrdState::Forbidden),
                        _ => None,
                    },
                    Err(_) => None,
                };
                if let Some(s) = state {
                    tx.send_if_modified(|old| std::mem::replace(old, s) != s);
                }
                match event {
                    Err(e) if state == Some(CrdState::Absent) => {
                        tracing::debug!(resource = pg.what, error = %e, "the PodGroup CRD is not installed; no gangs of this kind")
                    }
                    Err(e) => {
                        tracing::warn!(resource = pg.what, error = %e, "watch error; retrying")
                    }
                    Ok(_) => {}
                }
            })
            .await;
    });
    (
        PodGroupCache {
            api: pg,
            store,
            state: rx,
        },
        task,
    )
}

impl PodGroupCache {
    /// The cached PodGroups once the cache has an answer: none when the CRD is absent; a
    /// 403 is the error of a fresh list (it names the RBAC rule to add).
    async fn objects(&self, api: &ApiClient) -> Result<Vec<DynamicObject>, LiveError> {
        let mut rx = self.state.clone();
        let state = match rx.wait_for(|s| *s != CrdState::Unknown).await {
            Ok(s) => *s,
            Err(_) => return Err(LiveError::NotSynced(Duration::ZERO)),
        };
        match state {
            CrdState::Absent => Ok(Vec::new()),
            CrdState::Forbidden => list_pod_groups(api, self.api).await,
            CrdState::Present | CrdState::Unknown => {
                if self.store.wait_until_ready().await.is_err() {
                    return Err(LiveError::NotSynced(Duration::ZERO));
                }
                Ok(self
                    .store
                    .state()
                    .iter()
                    .map(|o| {
                        let mut o = o.as_ref().clone();
                        o.types.get_or_insert_with(|| self.api.type_meta());
                        o
                    })
                    .collect())
            }
        }
    }
}

fn spawn_cache<K>(
    client: kube::Client,
    config: watcher::Config,
    what: &'static str,
) -> (Store<K>, tokio::task::JoinHandle<()>)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let (reader, writer) = reflector::store::<K>();
    let stream =
        reflector::reflector(writer, watcher(Api::<K>::all(client), config)).default_backoff();
    let task = tokio::spawn(async move {
        stream
            .for_each(|event| async move {
                if let Err(e) = event {
                    tracing::warn!(resource = what, error = %e, "watch error; retrying");
                }
            })
            .await;
    });
    (reader, task)
}

impl WatchSource {
    pub fn start(api: &ApiClient, node_selector: &str) -> WatchSource {
        let c = &api.client;
        let mut node_cfg = watcher::Config::default();
        if !node_selector.trim().is_empty() {
            node_cfg = node_cfg.labels(node_selector);
        }
        let (nodes, t1) = spawn_cache(c.clone(), node_cfg, "nodes");
        let (pods, t2) = spawn_cache(c.clone(), watcher::Config::default(), "pods");
        let (pdbs, t3) = spawn_cache(
            c.clone(),
            watcher::Config::default(),
            "poddisruptionbudgets",
        );
        let (namespaces, t4) = spawn_cache(c.clone(), watcher::Config::default(), "namespaces");
        let (priority_classes, t5) =
            spawn_cache(c.clone(), watcher::Config::default(), "priorityclasses");
        let mut tasks = vec![t1, t2, t3, t4, t5];
        let pod_groups = POD_GROUP_APIS
            .iter()
            .map(|pg| {
                let (cache, task) = spawn_pod_group_cache(c.clone(), pg);
                tasks.push(task);
                cache
            })
            .collect();
        WatchSource {
            nodes,
            pods,
            pdbs,
            namespaces,
            priority_classes,
            pod_groups: Box::new(PodGroupCaches {
                caches: pod_groups,
                api: api.clone(),
            }),
            tasks,
        }
    }

    /// Builds a snapshot from the caches, once they have synced.
    pub async fn snapshot(&self, sync_timeout: Duration) -> Result<ClusterSnapshot, LiveError> {
        let synced = async {
            if !(self.nodes.wait_until_ready().await.is_ok()
                && self.pods.wait_until_ready().await.is_ok()
                && self.pdbs.wait_until_ready().await.is_ok()
                && self.namespaces.wait_until_ready().await.is_ok()
                && self.priority_classes.wait_until_ready().await.is_ok())
            {
                return Err(LiveError::NotSynced(sync_timeout));
            }
            let mut groups = Vec::new();
            for cache in &self.pod_groups.caches {
                groups.extend(cache.objects(&self.pod_groups.api).await?);
            }
            Ok(groups)
        };
        let groups = match tokio::time::timeout(sync_timeout, synced).await {
            Ok(Ok(groups)) => groups,
            Ok(Err(LiveError::NotSynced(_))) | Err(_) => {
                return Err(LiveError::NotSynced(sync_timeout))
            }
            Ok(Err(e)) => return Err(e),
        };
        let mut w = ListWriter::new();
        push_all_typed(&mut w, self.nodes.state());
        push_all_typed(&mut w, self.pods.state());
        push_all_typed(&mut w, self.pdbs.state());
        push_all_typed(&mut w, self.namespaces.state());
        push_all_typed(&mut w, self.priority_classes.state());
        groups.iter().for_each(|o| w.push(o));
        w.finish()
    }
}

fn push_all_typed<K: Serialize>(w: &mut ListWriter, items: Vec<Arc<K>>) {
    for o in &items {
        w.push(o.as_ref());
    }
}

impl Drop for WatchSource {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}
