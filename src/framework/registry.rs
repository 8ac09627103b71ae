//! The contract between the framework and a plugin: the extension points a plugin declares, and
//! the registry entry that names it, builds it from its args and says where it may be enabled.
//!
//! The registry itself (the table of every plugin) lives with the plugins; policy validation,
//! the pipeline builder and the plugin table of docs/compatibility.md all read that one table.

use super::{EvictorPlugin, Plugin, SortPlugin};
use crate::policy::ArgsError;

/// Where in a profile a plugin may be enabled (`profiles[].plugins.<point>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionPoint {
    /// May this pod be evicted at all? (the evictor)
    Filter,
    /// Checked just before an eviction is planned (the evictor).
    PreEvictionFilter,
    /// The order in which a profile's plugins take their candidates.
    Sort,
    /// Plugins that evict pods one by one, each for its own reason.
    Deschedule,
    /// Plugins that evict pods to even out the nodes.
    Balance,
}

impl ExtensionPoint {
    /// The point's key in a policy, as validation reports it (`preevictionfilter`).
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionPoint::Filter => "filter",
            ExtensionPoint::PreEvictionFilter => "preevictionfilter",
            ExtensionPoint::Sort => "sort",
            ExtensionPoint::Deschedule => "deschedule",
            ExtensionPoint::Balance => "balance",
        }
    }
}

/// A plugin built from its args, by the kind of extension point it serves.
#[derive(Debug)]
pub enum Built {
    /// A profile's evictor (`filter` and `preEvictionFilter`).
    Evictor(Box<dyn EvictorPlugin>),
    /// A profile's `sort` plugin.
    Sort(Box<dyn SortPlugin>),
    /// A `deschedule` or `balance` plugin.
    Strategy(Box<dyn Plugin>),
}

/// How a plugin is built from its args: decode them, apply their defaults, validate them (an
/// error carries the path of the field within the args) and construct the plugin.
#[derive(Debug, Clone, Copy)]
pub enum Constructor {
    Evictor(fn(&serde_json::Value) -> Result<Box<dyn EvictorPlugin>, ArgsError>),
    Sort(fn(&serde_json::Value) -> Result<Box<dyn SortPlugin>, ArgsError>),
    Strategy(StrategyConstructor),
}

/// Builds a deschedule or balance plugin from its args.
pub type StrategyConstructor = fn(&serde_json::Value) -> Result<Box<dyn Plugin>, ArgsError>;

/// One plugin's registry entry.
#[derive(Debug, Clone, Copy)]
pub struct PluginSpec {
    /// The upstream plugin name, such as `LowNodeUtilization`.
    pub name: &'static str,
    /// The extension points it implements.
    pub points: &'static [ExtensionPoint],
    /// Whether every arg has a default, so that enabling the plugin needs no pluginConfig entry.
    pub args_optional: bool,
    pub constructor: Constructor,
}

impl PluginSpec {
    /// A `deschedule` plugin whose args need a pluginConfig entry.
    pub const fn deschedule(name: &'static str, new: StrategyConstructor) -> PluginSpec {
        PluginSpec::strategy(name, &[ExtensionPoint::Deschedule], new)
    }

    /// A `balance` plugin whose args need a pluginConfig entry.
    pub const fn balance(name: &'static str, new: StrategyConstructor) -> PluginSpec {
        PluginSpec::strategy(name, &[ExtensionPoint::Balance], new)
    }

    const fn strategy(
        name: &'static str,
        points: &'static [ExtensionPoint],
        new: StrategyConstructor,
    ) -> PluginSpec {
        PluginSpec {
            name,
            points,
            args_optional: false,
            constructor: Constructor::Strategy(new),
        }
    }

    pub fn implements(&self, point: ExtensionPoint) -> bool {
        self.points.contains(&point)
    }

    /// Builds the plugin from its args (see [`Constructor`]).
    pub fn build(&self, args: &serde_json::Value) -> Result<Built, ArgsError> {
        Ok(match self.constructor {
            Constructor::Evictor(new) => Built::Evictor(new(args)?),
            Constructor::Sort(new) => Built::Sort(new(args)?),
            Constructor::Strategy(new) => Built::Strategy(new(args)?),
        })
    }
}

/// Every plugin a policy may name, in the order error messages list them.
#[derive(Debug, Clone, Copy)]
pub struct Registry {
    plugins: &'static [PluginSpec],
}

impl Registry {
    pub const fn new(plugins: &'static [PluginSpec]) -> Registry {
        Registry { plugins }
    }

    pub fn iter(&self) -> impl Iterator<Item = &'static PluginSpec> {
        self.plugins.iter()
    }

    pub fn get(&self, name: &str) -> Option<&'static PluginSpec> {
        self.plugins.iter().find(|p| p.name == name)
    }

    /// The plugin that serves as every profile's evictor: the one implementing `filter`.
    pub fn evictor(&self) -> &'static PluginSpec {
        self.plugins
            .iter()
            .find(|p| p.implements(ExtensionPoint::Filter))
            .expect("the registry holds an evictor")
    }
}
