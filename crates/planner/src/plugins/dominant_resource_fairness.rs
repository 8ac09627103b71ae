//! DominantResourceFairness (sort, beyond upstream): orders the pods a plugin chooses among so
//! that disruption falls on the tenant holding the largest share of the cluster.
//!
//! Upstream declares a `sort` extension point and never runs it; here a profile's `sort`
//! plugins decide the eviction order every plugin of the profile uses
//! ([`Context::sort_by_eviction_order`] and
//! [`Context::next_by_order`]). Without a sort plugin the order is upstream's:
//! lowest priority first, then QoS (BestEffort, Burstable, Guaranteed), pods preferring no
//! eviction last. With this one:
//!
//! ```yaml
//! plugins:
//!   sort:
//!     enabled: [DominantResourceFairness]
//! pluginConfig:            # optional: without it, tenants are namespaces
//! - name: DominantResourceFairness
//!   args:
//!     tenantLabel: example.com/team
//! ```
//!
//! - A tenant is a namespace, or with `tenantLabel` the value of that pod label. Pods without
//!   the label form one tenant, the empty value `""` (they do not fall back to their
//!   namespace, so a namespace name and a label value can never be confused).
//! - A tenant's dominant share is its largest share of any cluster resource: the requests of
//!   its active pods on Ready nodes over the allocatable of the Ready nodes, for cpu, memory
//!   and every extended resource (GPUs, ...) the nodes offer; `pods` and `ephemeral-storage`
//!   do not count.
//! - Candidates go highest current dominant share first; ties by the upstream order, then
//!   namespace/name. The shares are those of the plan so far: every planned eviction (by any
//!   plugin of any profile) takes the pod's requests off its tenant (see below).
//!
//! Args: `tenantLabel` (optional, a label key such as `team` or `example.com/team`).
//! No pluginConfig entry is needed when the defaults suit.
//!
//! What is computed when:
//! - Once per plan, for each distinct tenant definition some profile enables: each pod's
//!   tenant, the cluster capacity, and each tenant's usage before the plan.
//! - On every ordering call ([`Context::sort_by_eviction_order`],
//!   [`Context::next_by_order`]): the evictions planned since the previous call, by any
//!   plugin of any profile (and, when re-planning, the pods evicted earlier in the cycle), are
//!   taken off their tenants' usage, and those tenants' shares recomputed. Hence:
//!   - a plugin that sorts its candidates once and then walks the list (most plugins) orders
//!     them by the shares at the moment it sorts; the evictions it plans while walking do not
//!     reorder the rest of that list (a later sort, for the next node, sees them);
//!   - LowNodeUtilization and HighNodeUtilization pick each next pod with `next_by_order`, so
//!     every eviction they plan lowers its tenant's share before the next pick: victims come
//!     from the tenant with the highest share until it falls to the next one's, then in turn.
//! - At the end of the plan: each tenant's share before and after, for the report.

#[cfg(doc)]
use crate::framework::Context;
use crate::framework::{upstream_cmp, CandidateOrder, Ledger, PluginSpec, SortPlugin, TenantShare};
use crate::framework::{ArgsError, FromArgs, PluginArgs};
use crate::labels;
use crate::snapshot::{ClusterSnapshot, PodId, RESOURCE_PODS};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// The plugin's name in a policy.
pub const NAME: &str = "DominantResourceFairness";

/// The registry entry: a `sort` plugin whose args all have defaults.
pub(crate) const SPEC: PluginSpec = PluginSpec::sort::<DominantResourceFairness>(NAME);

/// The sort plugin: orders candidates by their tenant's dominant share, highest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DominantResourceFairness {
    /// The plugin's args.
    pub args: DominantResourceFairnessArgs,
}

impl SortPlugin for DominantResourceFairness {
    /// Profiles with the same tenant definition share one bookkeeping.
    fn share_key(&self) -> String {
        format!("{NAME}/{:?}", self.args.tenant_label)
    }

    fn start<'s>(&self, snap: &'s ClusterSnapshot) -> Box<dyn CandidateOrder + 's> {
        Box::new(Fairness::new(snap, self.args.tenant_label.as_deref()))
    }
}

/// `DominantResourceFairnessArgs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DominantResourceFairnessArgs {
    /// The pod label whose value names a pod's tenant; None: the pod's namespace.
    pub tenant_label: Option<String>,
}

impl PluginArgs for DominantResourceFairnessArgs {
    fn validate(&self) -> Result<(), ArgsError> {
        if let Some(label) = &self.tenant_label {
            if !labels::is_qualified_name(label) {
                return Err(ArgsError::new(
                    "tenantLabel",
                    format!(
                        "{label:?} is not a valid label key; give a key such as team or example.com/team, or leave tenantLabel out to make namespaces the tenants"
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl FromArgs for DominantResourceFairness {
    type Args = DominantResourceFairnessArgs;

    fn from_args(args: DominantResourceFairnessArgs) -> Result<Self, ArgsError> {
        Ok(DominantResourceFairness { args })
    }
}

/// Resources that never count towards a dominant share.
const NOT_SHARED: &[&str] = &[RESOURCE_PODS, "ephemeral-storage"];

/// A tenant's share of one resource: `used / capacity`, compared exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    used: i64,
    capacity: i64,
    /// Index of the resource in [`Fairness::resources`]; None: the tenant uses nothing.
    resource: Option<u32>,
}

impl Share {
    const ZERO: Share = Share {
        used: 0,
        capacity: 1,
        resource: None,
    };

    /// The share as a fraction (0.6 for 60%).
    pub fn fraction(&self) -> f64 {
        self.used as f64 / self.capacity as f64
    }
}

impl PartialOrd for Share {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Share {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.used as i128 * o.capacity as i128).cmp(&(o.used as i128 * self.capacity as i128))
    }
}

#[derive(Debug, Default)]
struct Live {
    started: bool,
    /// How many of the planning state's evictions are taken off `usage`.
    synced: usize,
    /// Tenant-major: `usage[tenant * resources + resource]`.
    usage: Vec<i64>,
    shares: Vec<Share>,
}

/// The DRF bookkeeping of one plan for one tenant definition.
#[derive(Debug)]
pub(crate) struct Fairness<'s> {
    snap: &'s ClusterSnapshot,
    tenant_label: Option<String>,
    /// Tenant names, sorted.
    tenants: Vec<&'s str>,
    /// Each pod's tenant (an index into `tenants`).
    tenant_of: Vec<u32>,
    /// Whether the pod's requests count: active and bound to a Ready node.
    counted: Vec<bool>,
    /// The shared resources and their cluster capacity (> 0).
    resources: Vec<(&'s str, i64)>,
    /// Usage before the plan, tenant-major.
    before: Vec<i64>,
    /// Tenants that hold something before the plan (they are reported).
    holds: Vec<bool>,
    live: Mutex<Live>,
}

impl<'s> Fairness<'s> {
    /// Tenants, capacity and usage before the plan (O(pods)).
    pub fn new(snap: &'s ClusterSnapshot, tenant_label: Option<&str>) -> Self {
        let mut capacity: BTreeMap<&'s str, i64> = BTreeMap::new();
        let mut ready = vec![false; snap.nodes.len()];
        for (i, n) in snap.nodes.iter().enumerate() {
            if !n.ready {
                continue;
            }
            ready[i] = true;
            for (name, v) in n.allocatable.iter() {
                if !NOT_SHARED.contains(&name) && v > 0 {
                    *capacity.entry(name).or_insert(0) += v;
                }
            }
        }
        let resources: Vec<(&'s str, i64)> = capacity.into_iter().collect();
        let tenant_key = |p: &'s crate::snapshot::Pod| -> &'s str {
            match tenant_label {
                None => &p.namespace,
                Some(l) => p.labels.get(l).unwrap_or(""),
            }
        };
        let mut names: BTreeMap<&'s str, u32> =
            snap.pods.iter().map(|p| (tenant_key(p), 0)).collect();
        for (i, v) in names.values_mut().enumerate() {
            *v = i as u32;
        }
        let tenant_of: Vec<u32> = snap.pods.iter().map(|p| names[tenant_key(p)]).collect();
        let tenants: Vec<&'s str> = names.into_keys().collect();
        let nr = resources.len();
        let mut before = vec![0i64; tenants.len() * nr];
        let mut holds = vec![false; tenants.len()];
        let mut counted = vec![false; snap.pods.len()];
        for (id, p) in snap.pods.iter().enumerate() {
            let on_ready = snap
                .pod_node(PodId::from_index(id))
                .is_some_and(|n| ready[n.index()]);
            if !(on_ready && p.is_active()) {
                continue;
            }
            counted[id] = true;
            let t = tenant_of[id] as usize;
            holds[t] = true;
            for (name, v) in p.requests.iter() {
                if let Some(r) = resources.iter().position(|(n, _)| *n == name) {
                    before[t * nr + r] += v;
                }
            }
        }
        Fairness {
            snap,
            tenant_label: tenant_label.map(str::to_string),
            tenants,
            tenant_of,
            counted,
            resources,
            before,
            holds,
            live: Mutex::new(Live::default()),
        }
    }

    /// The tenant a pod belongs to.
    #[cfg(test)]
    pub fn tenant(&self, pod: PodId) -> &'s str {
        self.tenants[self.tenant_of[pod.index()] as usize]
    }

    fn dominant(&self, usage: &[i64], tenant: usize) -> Share {
        let nr = self.resources.len();
        let mut best = Share::ZERO;
        for (r, &(_, cap)) in self.resources.iter().enumerate() {
            let s = Share {
                used: usage[tenant * nr + r].max(0),
                capacity: cap,
                resource: Some(r as u32),
            };
            if s.used > 0 && s > best {
                best = s;
            }
        }
        best
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the evictions planned since the last call off their tenants' usage.
    fn sync(&self, ledger: &Ledger<'_>) {
        let mut live = self.live();
        let live = &mut *live;
        let nr = self.resources.len();
        let take = |live: &mut Live, pod: PodId| {
            if !self.counted[pod.index()] {
                return;
            }
            let t = self.tenant_of[pod.index()] as usize;
            for (name, v) in self.snap.pod(pod).requests.iter() {
                if let Some(r) = self.resources.iter().position(|(n, _)| *n == name) {
                    live.usage[t * nr + r] -= v;
                }
            }
            live.shares[t] = self.dominant(&live.usage, t);
        };
        if !live.started {
            live.started = true;
            live.usage = self.before.clone();
            live.shares = (0..self.tenants.len())
                .map(|t| self.dominant(&self.before, t))
                .collect();
            // Pods gone before the first call: earlier in the cycle, or by earlier plugins.
            for pod in self.snap.pod_ids() {
                if ledger.is_planned(pod) {
                    take(live, pod);
                }
            }
            live.synced = ledger.evictions().len();
        }
        let evictions = ledger.evictions();
        debug_assert!(
            live.synced <= evictions.len(),
            "one planning state per plan"
        );
        for e in &evictions[live.synced.min(evictions.len())..] {
            take(live, e.pod);
        }
        live.synced = evictions.len();
    }

    /// The tenant's dominant share now, with the plan so far.
    #[cfg(test)]
    pub fn share(&self, ledger: &Ledger<'_>, tenant: &str) -> Option<Share> {
        self.sync(ledger);
        let t = self.tenants.binary_search(&tenant).ok()?;
        Some(self.live().shares[t])
    }

    /// The resource a share is of.
    pub(crate) fn resource_name(&self, share: &Share) -> Option<&'s str> {
        share.resource.map(|r| self.resources[r as usize].0)
    }

    fn cmp(&self, shares: &[Share], a: PodId, b: PodId) -> Ordering {
        let (ta, tb) = (
            self.tenant_of[a.index()] as usize,
            self.tenant_of[b.index()] as usize,
        );
        shares[tb]
            .cmp(&shares[ta])
            .then_with(|| upstream_cmp(self.snap, a, b))
    }
}

impl CandidateOrder for Fairness<'_> {
    /// Sorts candidates by their tenant's current dominant share, highest first.
    fn sort(&self, ledger: &Ledger<'_>, pods: &mut [PodId]) {
        self.sync(ledger);
        let live = self.live();
        pods.sort_by(|&a, &b| self.cmp(&live.shares, a, b));
    }

    /// Removes and returns the candidate whose tenant has the highest share now.
    fn take_next(&self, ledger: &Ledger<'_>, pods: &mut Vec<PodId>) -> Option<PodId> {
        self.sync(ledger);
        let live = self.live();
        let (i, _) = pods
            .iter()
            .enumerate()
            .min_by(|(_, &a), (_, &b)| self.cmp(&live.shares, a, b))?;
        Some(pods.remove(i))
    }

    /// Every tenant that held something before the plan, with its share before and after.
    fn summary(&self, ledger: &Ledger<'_>) -> Vec<TenantShare> {
        self.sync(ledger);
        let live = self.live();
        (0..self.tenants.len())
            .filter(|&t| self.holds[t])
            .map(|t| {
                let before = self.dominant(&self.before, t);
                let after = live.shares[t];
                TenantShare {
                    tenant: self.tenants[t].to_string(),
                    tenant_label: self.tenant_label.clone(),
                    before: before.fraction(),
                    before_resource: self.resource_name(&before).map(str::to_string),
                    after: after.fraction(),
                    after_resource: self.resource_name(&after).map(str::to_string),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod order_tests;
