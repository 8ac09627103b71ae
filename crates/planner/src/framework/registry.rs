//! The contract between the framework and a plugin: the extension points a plugin declares, and
//! the registry entry that names it, builds it from its args and says where it may be enabled.
//!
//! The registry itself (the table of every plugin) lives with the plugins and is passed in:
//! to policy loading (as its [`PluginCatalog`]), to the pipeline builder; the plugin table of
//! docs/compatibility.md is checked against it.

use super::args::{args_from_json, ArgsError, FromArgs};
use super::{EvictorPlugin, Plugin, SortPlugin};
pub use crate::policy::ExtensionPoint;
use crate::policy::PluginCatalog;

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
    /// Builds a profile's evictor.
    Evictor(fn(&serde_json::Value) -> Result<Box<dyn EvictorPlugin>, ArgsError>),
    /// Builds a profile's `sort` plugin.
    Sort(fn(&serde_json::Value) -> Result<Box<dyn SortPlugin>, ArgsError>),
    /// Builds a `deschedule` or `balance` plugin.
    Strategy(StrategyConstructor),
}

/// Builds a deschedule or balance plugin from its args.
pub(crate) type StrategyConstructor = fn(&serde_json::Value) -> Result<Box<dyn Plugin>, ArgsError>;

/// One plugin's registry entry.
#[derive(Debug, Clone, Copy)]
pub struct PluginSpec {
    /// The upstream plugin name, such as `LowNodeUtilization`.
    pub name: &'static str,
    /// The extension points it implements.
    pub points: &'static [ExtensionPoint],
    /// Whether every arg has a default, so that enabling the plugin needs no pluginConfig entry.
    pub args_optional: bool,
    /// How the plugin is built from its args.
    pub constructor: Constructor,
}

/// Builds a plugin through its args contract ([`FromArgs`]): decode, default, validate, build.
fn build_strategy<P: FromArgs + Plugin + 'static>(
    args: &serde_json::Value,
) -> Result<Box<dyn Plugin>, ArgsError> {
    Ok(Box::new(P::from_args(args_from_json(args)?)?))
}

fn build_evictor<P: FromArgs + EvictorPlugin + 'static>(
    args: &serde_json::Value,
) -> Result<Box<dyn EvictorPlugin>, ArgsError> {
    Ok(Box::new(P::from_args(args_from_json(args)?)?))
}

fn build_sort<P: FromArgs + SortPlugin + 'static>(
    args: &serde_json::Value,
) -> Result<Box<dyn SortPlugin>, ArgsError> {
    Ok(Box::new(P::from_args(args_from_json(args)?)?))
}

impl PluginSpec {
    /// A `deschedule` plugin whose args need a pluginConfig entry.
    pub const fn deschedule<P: FromArgs + Plugin + 'static>(name: &'static str) -> PluginSpec {
        Self::strategy::<P>(name, &[ExtensionPoint::Deschedule])
    }

    /// A `balance` plugin whose args need a pluginConfig entry.
    pub const fn balance<P: FromArgs + Plugin + 'static>(name: &'static str) -> PluginSpec {
        Self::strategy::<P>(name, &[ExtensionPoint::Balance])
    }

    const fn strategy<P: FromArgs + Plugin + 'static>(
        name: &'static str,
        points: &'static [ExtensionPoint],
    ) -> PluginSpec {
        PluginSpec {
            name,
            points,
            args_optional: false,
            constructor: Constructor::Strategy(build_strategy::<P>),
        }
    }

    /// A profile's evictor (`filter` and `preEvictionFilter`), whose args all have defaults.
    pub const fn evictor<P: FromArgs + EvictorPlugin + 'static>(name: &'static str) -> PluginSpec {
        PluginSpec {
            name,
            points: &[ExtensionPoint::Filter, ExtensionPoint::PreEvictionFilter],
            args_optional: true,
            constructor: Constructor::Evictor(build_evictor::<P>),
        }
    }

    /// A `sort` plugin, whose args all have defaults.
    pub const fn sort<P: FromArgs + SortPlugin + 'static>(name: &'static str) -> PluginSpec {
        PluginSpec {
            name,
            points: &[ExtensionPoint::Sort],
            args_optional: true,
            constructor: Constructor::Sort(build_sort::<P>),
        }
    }

    /// The same plugin, enabled with no pluginConfig entry: every one of its args has a
    /// default.
    pub(crate) const fn args_optional(self) -> PluginSpec {
        PluginSpec {
            args_optional: true,
            ..self
        }
    }

    pub(crate) fn implements(&self, point: ExtensionPoint) -> bool {
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
    /// A registry of `plugins`, listed in the order given.
    pub const fn new(plugins: &'static [PluginSpec]) -> Registry {
        Registry { plugins }
    }

    /// Every plugin, in the registry's order.
    pub fn iter(&self) -> impl Iterator<Item = &'static PluginSpec> {
        self.plugins.iter()
    }

    /// The plugin named `name`, if any.
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

impl PluginCatalog for Registry {
    fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name).collect()
    }

    fn points(&self, name: &str) -> Option<&'static [ExtensionPoint]> {
        self.get(name).map(|p| p.points)
    }

    fn args_optional(&self, name: &str) -> bool {
        self.get(name).is_some_and(|p| p.args_optional)
    }

    fn evictor(&self) -> &'static str {
        Registry::evictor(self).name
    }
}
