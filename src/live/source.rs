//! Cluster sources for live mode. One-shot mode lists nodes, pods, PDBs, namespaces and
//! priority classes (paginated); continuous mode keeps watch caches (kube's reflectors) and
//! builds each cycle's snapshot from them without listing again. Both hand the objects to the
//! same decoder that reads snapshot files, so live and offline plans agree.

use super::client::ApiClient;
use super::LiveError;
use crate::snapshot::{decode, ClusterSnapshot};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{Api, ListParams};
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
    let all: Api<K> = Api::all(api.client.clone());
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    loop {
        api.throttle().await;
        let mut p = params.clone().limit(PAGE);
        if let Some(t) = &token {
            p = p.continue_token(t);
        }
        let list = all
            .list(&p)
            .await
            .map_err(|source| LiveError::List { what, source })?;
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
    let mut w = ListWriter::new();
    nodes.iter().for_each(|o| w.push(o));
    pods.iter().for_each(|o| w.push(o));
    pdbs.iter().for_each(|o| w.push(o));
    namespaces.iter().for_each(|o| w.push(o));
    pcs.iter().for_each(|o| w.push(o));
    w.finish()
}

/// Watch caches for continuous mode.
pub struct WatchSource {
    nodes: Store<Node>,
    pods: Store<Pod>,
    pdbs: Store<PodDisruptionBudget>,
    namespaces: Store<Namespace>,
    priority_classes: Store<PriorityClass>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
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
        WatchSource {
            nodes,
            pods,
            pdbs,
            namespaces,
            priority_classes,
            tasks: vec![t1, t2, t3, t4, t5],
        }
    }

    /// Builds a snapshot from the caches, once they have synced.
    pub async fn snapshot(&self, sync_timeout: Duration) -> Result<ClusterSnapshot, LiveError> {
        let synced = async {
            self.nodes.wait_until_ready().await.is_ok()
                && self.pods.wait_until_ready().await.is_ok()
                && self.pdbs.wait_until_ready().await.is_ok()
                && self.namespaces.wait_until_ready().await.is_ok()
                && self.priority_classes.wait_until_ready().await.is_ok()
        };
        match tokio::time::timeout(sync_timeout, synced).await {
            Ok(true) => {}
            _ => return Err(LiveError::NotSynced(sync_timeout)),
        }
        let mut w = ListWriter::new();
        push_all_typed(&mut w, self.nodes.state());
        push_all_typed(&mut w, self.pods.state());
        push_all_typed(&mut w, self.pdbs.state());
        push_all_typed(&mut w, self.namespaces.state());
        push_all_typed(&mut w, self.priority_classes.state());
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
