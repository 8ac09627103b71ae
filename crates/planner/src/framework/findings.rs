//! Findings: what a plugin reports of its own beside its evictions and notes (the measured
//! usage it planned with, the nodes it found overutilized, the thresholds it classified
//! nodes with, the pending units it made room for, ...), through one door
//! ([`super::Context::report`]) into one collection ([`Findings`]) that the plan carries
//! and the report reads.
//!
//! A kind of finding is a type implementing [`Finding`]: its stable key (the JSON key of
//! the report's section, where the report shows it) and how findings of the kind are kept
//! over a cycle ([`Finding::Kept`]). The planner's own uses of a kind read it back by type
//! ([`Findings::get`]).

use crate::snapshot::usage::UsageSource;
use crate::snapshot::{GangId, NodeId, PodId, Resources};
use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::fmt::Debug;

/// Who reported a finding: the profile and the plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reporter<'a> {
    /// The profile's name.
    pub profile: &'a str,
    /// The plugin's name.
    pub plugin: &'static str,
}

/// A kind of finding a plugin reports ([`super::Context::report`]).
pub trait Finding: Sized + 'static {
    /// The kind's stable key: its JSON key in the report, where the report shows it.
    const KEY: &'static str;
    /// How the findings of the kind are kept over a cycle (a list, a map by node, ...).
    type Kept: Default + Clone + Debug + Send + Sync + 'static;
    /// Adds this finding, reported by `by`, to those kept so far.
    fn keep(self, by: Reporter<'_>, kept: &mut Self::Kept);
}

/// The findings of a cycle, by kind.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    /// Each kind reported: its type, its key and what is kept of it.
    kinds: Vec<(TypeId, &'static str, Box<dyn AnyKept>)>,
}

/// What is kept of one kind, whatever its type.
trait AnyKept: Any + Debug + Send + Sync {
    fn clone_box(&self) -> Box<dyn AnyKept>;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Any + Clone + Debug + Send + Sync> AnyKept for T {
    fn clone_box(&self) -> Box<dyn AnyKept> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl Clone for Box<dyn AnyKept> {
    fn clone(&self) -> Self {
        (**self).clone_box()
    }
}

impl Findings {
    /// Keeps a finding reported by `by`.
    pub fn report<F: Finding>(&mut self, by: Reporter<'_>, finding: F) {
        finding.keep(by, self.kept_mut::<F>());
    }

    /// What is kept of kind `F`; None when nothing of it was reported.
    pub fn get<F: Finding>(&self) -> Option<&F::Kept> {
        let id = TypeId::of::<F>();
        let (_, _, kept) = self.kinds.iter().find(|(t, _, _)| *t == id)?;
        (**kept).as_any().downcast_ref()
    }

    /// The findings of kind `F` kept as a list, in the order they were reported (none when
    /// nothing of it was).
    pub fn list<F, T>(&self) -> &[T]
    where
        F: Finding<Kept = Vec<T>>,
    {
        self.get::<F>().map_or(&[], Vec::as_slice)
    }

    /// The keys of the kinds reported, in the order they were first reported.
    pub fn keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.kinds.iter().map(|(_, key, _)| *key)
    }

    /// What is kept of kind `F`, made when it is the first of its kind.
    fn kept_mut<F: Finding>(&mut self) -> &mut F::Kept {
        let id = TypeId::of::<F>();
        let at = match self.kinds.iter().position(|(t, _, _)| *t == id) {
            Some(at) => at,
            None => {
                debug_assert!(
                    self.kinds.iter().all(|(_, key, _)| *key != F::KEY),
                    "two kinds of finding share the key {}",
                    F::KEY
                );
                self.kinds.push((id, F::KEY, Box::new(F::Kept::default())));
                self.kinds.len() - 1
            }
        };
        (*self.kinds[at].2)
            .as_any_mut()
            .downcast_mut()
            .expect("a kind's findings are kept as its Kept type")
    }
}

/// Measured usage a plugin planned with (LowNodeUtilization with real usage): a node's
/// figures, or a planned eviction's usage taken off them. Kept by node id; the first plugin
/// to measure a node sets its figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeasuredUsage {
    /// The node's measured usage before the plan (its `after` starts equal).
    Node(NodeId, MeasuredNode),
    /// A pod planned for eviction from the node: its measured usage off the `after`
    /// figures.
    Taken {
        /// The node the pod is planned to leave.
        node: NodeId,
        /// The pod's measured cpu, millicores.
        cpu: i64,
        /// The pod's measured memory, bytes.
        memory: i64,
    },
}

impl Finding for MeasuredUsage {
    const KEY: &'static str = "measured";
    type Kept = Vec<Option<MeasuredNode>>;
    fn keep(self, _: Reporter<'_>, kept: &mut Self::Kept) {
        match self {
            MeasuredUsage::Node(node, m) => {
                let i = node.index();
                if kept.len() <= i {
                    kept.resize(i + 1, None);
                }
                if kept[i].is_none() {
                    kept[i] = Some(m);
                }
            }
            MeasuredUsage::Taken { node, cpu, memory } => {
                if let Some(Some(m)) = kept.get_mut(node.index()) {
                    m.after.cpu -= cpu;
                    m.after.memory -= memory;
                }
            }
        }
    }
}

impl MeasuredUsage {
    /// A node's measured usage as the plan leaves it, where a plugin planned with it.
    pub fn of(findings: &Findings, node: NodeId) -> Option<&MeasuredNode> {
        findings.get::<MeasuredUsage>()?.get(node.index())?.as_ref()
    }
}

/// The nodes a plugin found overutilized this cycle, by name: for the next cycle's
/// [`super::History`] and for the rule that stops a workload whose replacement lands on one
/// ([`crate::plan::stops_workload`]). Kept by `profile/plugin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overutilized(pub Vec<String>);

impl Finding for Overutilized {
    const KEY: &'static str = "over";
    type Kept = BTreeMap<String, Vec<String>>;
    fn keep(self, by: Reporter<'_>, kept: &mut Self::Kept) {
        kept.insert(format!("{}/{}", by.profile, by.plugin), self.0);
    }
}

impl Overutilized {
    /// The nodes each plugin found overutilized, by `profile/plugin`.
    pub fn of(findings: &Findings) -> &BTreeMap<String, Vec<String>> {
        static NONE: BTreeMap<String, Vec<String>> = BTreeMap::new();
        findings.get::<Overutilized>().unwrap_or(&NONE)
    }
}

/// The utilization thresholds a plugin classifies nodes with, in percent of allocatable by
/// resource: underutilized below `low`, overutilized above `high`; with `deviation`, both
/// relative to the nodes' mean. Kept as [`UtilizationThresholds`], in plugin order.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// The low thresholds by resource (percent).
    pub low: BTreeMap<String, f64>,
    /// The high thresholds by resource (percent).
    pub high: BTreeMap<String, f64>,
    /// Whether both are relative to the nodes' mean (`useDeviationThresholds`).
    pub deviation: bool,
}

impl Finding for Thresholds {
    const KEY: &'static str = "thresholds";
    type Kept = Vec<UtilizationThresholds>;
    fn keep(self, by: Reporter<'_>, kept: &mut Self::Kept) {
        kept.push(UtilizationThresholds {
            profile: by.profile.to_string(),
            plugin: by.plugin,
            low: self.low,
            high: self.high,
            deviation: self.deviation,
        });
    }
}

/// A pending unit a plugin (MakeRoomForPendingPods) made room for, or found no room for,
/// kept as the reporter's, in plan order. Its placed pods count in the plan's after-figures.
impl Finding for PendingUnit {
    const KEY: &'static str = "pending";
    type Kept = Vec<PendingUnit>;
    fn keep(mut self, by: Reporter<'_>, kept: &mut Self::Kept) {
        self.profile = by.profile.to_string();
        self.plugin = by.plugin;
        kept.push(self);
    }
}

/// A pending unit (a pod, or the pending members of a gang) a plugin made room for, or
/// found no room for: where the simulator places each pod, and which planned evictions make
/// the room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingUnit {
    /// The profile of the plugin that made room (set when kept).
    pub profile: String,
    /// The plugin that made room (set when kept).
    pub plugin: &'static str,
    /// The gang, when the unit is the pending members of one.
    pub gang: Option<GangId>,
    /// The pending pods of the unit, in the order they are placed.
    pub pods: Vec<PodId>,
    /// Where the simulator places each pod of `pods` (None for all when the unit cannot be
    /// placed).
    pub destinations: Vec<Option<NodeId>>,
    /// The planned evictions (moves) that make the room, in plan order.
    pub made_room_by: Vec<PodId>,
    /// Why the unit cannot be placed (the scheduler's reason), when it cannot.
    pub reason: Option<String>,
}

/// The measured usage a plugin planned with on a node: before the plan and after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeasuredNode {
    /// Where the measurements came from.
    pub source: UsageSource,
    /// Measured cpu (millicores) and memory (bytes).
    pub before: Resources,
    /// `before` minus the usage of the pods planned for eviction from the node.
    pub after: Resources,
}

/// The utilization thresholds a plugin classified the nodes with, in percent of allocatable
/// by resource: underutilized below `low`, overutilized above `high` (empty when the plugin
/// has no such bound); with `deviation`, both are relative to the nodes' mean.
#[derive(Debug, Clone, PartialEq)]
pub struct UtilizationThresholds {
    /// The profile of the plugin.
    pub profile: String,
    /// The plugin's name.
    pub plugin: &'static str,
    /// Underutilized below these, by resource.
    pub low: BTreeMap<String, f64>,
    /// Overutilized above these, by resource.
    pub high: BTreeMap<String, f64>,
    /// Whether `low` and `high` are relative to the nodes' mean.
    pub deviation: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const BY: Reporter<'static> = Reporter {
        profile: "p",
        plugin: "Plugin",
    };

    #[test]
    fn each_kind_is_kept_as_its_own_type_and_read_back_by_type() {
        let mut f = Findings::default();
        assert!(f.get::<Overutilized>().is_none());
        assert!(f.list::<Thresholds, _>().is_empty());
        f.report(BY, Overutilized(vec!["n1".into()]));
        f.report(
            BY,
            Thresholds {
                low: BTreeMap::from([("cpu".into(), 20.0)]),
                high: BTreeMap::new(),
                deviation: false,
            },
        );
        f.report(BY, Overutilized(vec!["n2".into()]));
        assert_eq!(
            Overutilized::of(&f)["p/Plugin"],
            ["n2"],
            "a plugin's latest"
        );
        let t = f.list::<Thresholds, _>();
        assert_eq!(
            (t.len(), t[0].profile.as_str(), t[0].plugin),
            (1, "p", "Plugin")
        );
        assert_eq!(f.keys().collect::<Vec<_>>(), ["over", "thresholds"]);
        let copy = f.clone();
        assert_eq!(Overutilized::of(&copy), Overutilized::of(&f));
    }

    #[test]
    fn measured_usage_is_set_once_by_node_and_taken_off_after() {
        let mut f = Findings::default();
        let node = |cpu| MeasuredNode {
            source: UsageSource::MetricsServer,
            before: Resources::new(cpu, 0, 0),
            after: Resources::new(cpu, 0, 0),
        };
        f.report(BY, MeasuredUsage::Node(NodeId::new(2), node(900)));
        f.report(BY, MeasuredUsage::Node(NodeId::new(2), node(100)));
        f.report(
            BY,
            MeasuredUsage::Taken {
                node: NodeId::new(2),
                cpu: 300,
                memory: 0,
            },
        );
        f.report(
            BY,
            MeasuredUsage::Taken {
                node: NodeId::new(5),
                cpu: 300,
                memory: 0,
            },
        );
        let m = MeasuredUsage::of(&f, NodeId::new(2)).unwrap();
        assert_eq!((m.before.cpu, m.after.cpu), (900, 600));
        assert!(
            MeasuredUsage::of(&f, NodeId::new(0)).is_none()
                && MeasuredUsage::of(&f, NodeId::new(5)).is_none()
        );
    }
}
