//! `evictionBudgets`: budgets of evictions with optional time windows, an extension of the
//! policy file (upstream has no such field). Karpenter's NodePool `disruption.budgets`
//! semantics, for pod evictions:
//!
//! - a budget allows `evictions` (a count, or a percentage of the pods in its scope, rounded
//!   up) within its `period` (a sliding window over earlier cycles; without one, a cycle);
//! - its scope is every eviction, or those of some `profiles`, `plugins`, `namespaces` or
//!   pods matching a `labelSelector` (all that are given must hold);
//! - with a cron `schedule` and a `duration`, it applies only from each time the schedule
//!   fires until `duration` later (UTC); outside its window it does not apply;
//! - every budget that applies holds, so the smallest one wins; a budget of 0 blocks.

use super::PolicyError;
use crate::labels::{LabelSelectorSpec, Selector};
use crate::snapshot::{ClusterSnapshot, Pod};
use chrono::{TimeZone, Utc};
use croner::Cron;
use serde::{Deserialize, Serialize};

/// One entry of `evictionBudgets`, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvictionBudgetSpec {
    /// `name`: how reports, logs and metrics name the budget; unique in the policy.
    #[serde(default)]
    pub name: String,
    /// `evictions`: how many evictions the budget allows, a count (`3`, `"3"`) or a
    /// percentage of the pods in its scope (`"5%"`, rounded up).
    #[serde(default)]
    pub evictions: serde_json::Value,
    /// `schedule`: a 5-field cron schedule (UTC) at which the budget's window opens; None:
    /// the budget always applies.
    #[serde(default)]
    pub schedule: Option<String>,
    /// `duration`: how long each window lasts (a Go duration); required with `schedule`.
    #[serde(default)]
    pub duration: Option<String>,
    /// `period`: the sliding period evictions are counted over, across cycles (a Go
    /// duration); None: one cycle.
    #[serde(default)]
    pub period: Option<String>,
    /// `profiles`: the profiles whose evictions count (empty: all).
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub profiles: Vec<String>,
    /// `plugins`: the plugins whose evictions count (empty: all).
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub plugins: Vec<String>,
    /// `namespaces`: the namespaces whose pods count (empty: all).
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub namespaces: Vec<String>,
    /// `labelSelector`: the pods that count (None: all).
    #[serde(default)]
    pub label_selector: Option<LabelSelectorSpec>,
}

/// How many evictions a budget allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetLimit {
    /// A number of evictions.
    Count(u32),
    /// A percentage (0-100) of the pods in the budget's scope, rounded up.
    Percent(u32),
}

/// When a budget applies: from each time `cron` fires, for `seconds`.
#[derive(Debug, Clone)]
pub struct BudgetWindow {
    /// The schedule as written.
    pub schedule: String,
    cron: Cron,
    /// How long each window lasts, in seconds.
    pub seconds: i64,
}

/// One budget of `evictionBudgets`, validated.
#[derive(Debug, Clone)]
pub struct EvictionBudget {
    /// The budget's name.
    pub name: String,
    /// How many evictions it allows.
    pub limit: BudgetLimit,
    /// When it applies (None: always).
    pub window: Option<BudgetWindow>,
    /// The sliding period evictions count over, in seconds (None: the cycle).
    pub period: Option<i64>,
    /// The profiles whose evictions count (empty: all).
    pub profiles: Vec<String>,
    /// The plugins whose evictions count (empty: all).
    pub plugins: Vec<String>,
    /// The namespaces whose pods count (empty: all).
    pub namespaces: Vec<String>,
    /// The pods that count (None: all).
    pub selector: Option<Selector>,
}

impl EvictionBudget {
    /// Whether the budget applies at `now` (unix seconds): always without a window; else
    /// when its schedule fired within the window's duration before `now`.
    pub fn applies_at(&self, now: i64) -> bool {
        let Some(w) = &self.window else {
            return true;
        };
        let Some(opened_after) = Utc.timestamp_opt(now - w.seconds, 0).single() else {
            return false;
        };
        w.cron
            .find_next_occurrence(&opened_after, false)
            .is_ok_and(|t| t.timestamp() <= now)
    }

    /// Whether a pod is in the budget's scope (its namespace and labels).
    pub fn covers_pod(&self, pod: &Pod) -> bool {
        (self.namespaces.is_empty() || self.namespaces.iter().any(|n| **n == *pod.namespace))
            && self
                .selector
                .as_ref()
                .is_none_or(|s| s.matches(&pod.labels))
    }

    /// Whether an eviction of `pod` planned by `plugin` of `profile` counts against the budget.
    pub fn covers(&self, profile: &str, plugin: &str, pod: &Pod) -> bool {
        (self.profiles.is_empty() || self.profiles.iter().any(|p| p == profile))
            && (self.plugins.is_empty() || self.plugins.iter().any(|p| p == plugin))
            && self.covers_pod(pod)
    }

    /// How many evictions the budget allows on this snapshot: its count, or its percentage
    /// of the active pods bound to a node in its scope, rounded up.
    pub fn allowed(&self, snap: &ClusterSnapshot) -> u32 {
        match self.limit {
            BudgetLimit::Count(n) => n,
            BudgetLimit::Percent(pct) => {
                let pods = snap
                    .pods
                    .iter()
                    .filter(|p| p.node_name.is_some() && p.is_active() && self.covers_pod(p))
                    .count() as u64;
                (pods * u64::from(pct)).div_ceil(100) as u32
            }
        }
    }

    /// The budget as reasons name it: `evictionBudget "name" (5% of 40 pods, 2 per 1h,
    /// during "0 9 * * 1-5" for 8h)`.
    pub fn describe(&self, allowed: u32) -> String {
        let limit = match self.limit {
            BudgetLimit::Count(1) => "1 eviction".to_string(),
            BudgetLimit::Count(n) => format!("{n} evictions"),
            BudgetLimit::Percent(p) => format!("{p}% of the pods in scope: {allowed}"),
        };
        let per = match self.period {
            Some(s) => format!(" per {}", fmt_seconds(s)),
            None => " per cycle".to_string(),
        };
        let when = match &self.window {
            Some(w) => format!(", from {:?} for {}", w.schedule, fmt_seconds(w.seconds)),
            None => String::new(),
        };
        format!("evictionBudget {:?} ({limit}{per}{when})", self.name)
    }
}

/// `90` → `1m30s`, `3600` → `1h`.
fn fmt_seconds(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, (seconds % 3600) / 60, seconds % 60);
    let mut out = String::new();
    for (n, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if n > 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// The limit of `evictions`: a count (a non-negative integer, as a number or a string) or a
/// percentage (`"N%"`, N from 0 to 100).
fn limit(v: &serde_json::Value) -> Result<BudgetLimit, String> {
    const FIX: &str = "give a count of evictions (such as 3) or a percentage of the pods in the budget's scope (such as \"5%\")";
    let count = |n: i64| {
        u32::try_from(n)
            .map(BudgetLimit::Count)
            .map_err(|_| format!("{n} is out of range; {FIX}"))
    };
    match v {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(n) => count(n),
            None => Err(format!("{n} is not a whole number; {FIX}")),
        },
        serde_json::Value::String(s) => {
            let t = s.trim();
            if let Some(pct) = t.strip_suffix('%') {
                match pct.trim().parse::<u32>() {
                    Ok(p) if p <= 100 => Ok(BudgetLimit::Percent(p)),
                    Ok(_) => Err(format!("{s:?} is over 100%; {FIX}")),
                    Err(_) => Err(format!("{s:?} is not a percentage; {FIX}")),
                }
            } else {
                match t.parse::<i64>() {
                    Ok(n) => count(n),
                    Err(_) => Err(format!("{s:?} is neither a count nor a percentage; {FIX}")),
                }
            }
        }
        serde_json::Value::Null => Err(format!("missing; {FIX}")),
        other => Err(format!(
            "expected a number or a string, found {other}; {FIX}"
        )),
    }
}

/// A positive Go duration, in seconds.
fn positive_duration(text: &str) -> Result<i64, String> {
    let seconds = super::parse_duration(text)?;
    if seconds < 1 {
        return Err(format!(
            "{text:?} is shorter than a second; give a duration such as 30m, 8h or 24h"
        ));
    }
    Ok(seconds)
}

/// A cron schedule of 5 fields (minute hour day-of-month month day-of-week), or one of the
/// `@` shorthands (`@daily`, `@weekly`, ...).
fn schedule(text: &str) -> Result<Cron, String> {
    const FIX: &str = "give minute hour day-of-month month day-of-week (UTC), such as \"0 9 * * 1-5\", or @daily, @weekly";
    let t = text.trim();
    let fields = t.split_whitespace().count();
    if !t.starts_with('@') && fields != 5 {
        return Err(format!("{text:?} has {fields} fields; {FIX}"));
    }
    t.parse::<Cron>()
        .map_err(|e| format!("{text:?} is not a cron schedule ({e}); {FIX}"))
}

/// Validates `evictionBudgets` against the policy's profile names and the plugins that exist
/// (`is_plugin`), and compiles them.
pub(super) fn compile(
    file: &str,
    specs: &[EvictionBudgetSpec],
    profiles: &[&str],
    is_plugin: &dyn Fn(&str) -> Result<(), String>,
) -> Result<Vec<EvictionBudget>, PolicyError> {
    let mut out: Vec<EvictionBudget> = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        let at = |field: &str| format!("evictionBudgets[{i}].{field}");
        let err = |field: &str, m: String| PolicyError::new(file, at(field), m);
        let name = s.name.trim();
        if name.is_empty() {
            return Err(err(
                "name",
                "missing; give every budget a name (reports and metrics name it)".into(),
            ));
        }
        if out.iter().any(|b| b.name == name) {
            return Err(err(
                "name",
                format!("duplicate budget name {name:?}; budget names must be unique"),
            ));
        }
        let limit = limit(&s.evictions).map_err(|m| err("evictions", m))?;
        let window = match (&s.schedule, &s.duration) {
            (Some(c), Some(d)) => Some(BudgetWindow {
                schedule: c.trim().to_string(),
                cron: schedule(c).map_err(|m| err("schedule", m))?,
                seconds: positive_duration(d).map_err(|m| err("duration", m))?,
            }),
            (Some(_), None) => {
                return Err(err(
                    "duration",
                    "missing; a budget with a schedule needs a duration, how long each window lasts (such as 8h)".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(err(
                    "schedule",
                    "missing; a duration needs a schedule, when each window opens (such as \"0 9 * * 1-5\"); remove duration for a budget that always applies".into(),
                ))
            }
            (None, None) => None,
        };
        let period = s
            .period
            .as_deref()
            .map(positive_duration)
            .transpose()
            .map_err(|m| err("period", m))?;
        for (j, p) in s.profiles.iter().enumerate() {
            if !profiles.contains(&p.as_str()) {
                return Err(err(
                    &format!("profiles[{j}]"),
                    format!(
                        "no profile is named {p:?}; the profiles are {}",
                        profiles.join(", ")
                    ),
                ));
            }
        }
        for (j, p) in s.plugins.iter().enumerate() {
            is_plugin(p).map_err(|m| err(&format!("plugins[{j}]"), m))?;
        }
        for (j, n) in s.namespaces.iter().enumerate() {
            if n.trim().is_empty() {
                return Err(err(
                    &format!("namespaces[{j}]"),
                    "empty; give a namespace name, or leave namespaces out to count every namespace".into(),
                ));
            }
        }
        let selector = s
            .label_selector
            .as_ref()
            .map(Selector::compile)
            .transpose()
            .map_err(|e| err("labelSelector", format!("{e}")))?;
        out.push(EvictionBudget {
            name: name.to_string(),
            limit,
            window,
            period,
            profiles: s.profiles.clone(),
            plugins: s.plugins.clone(),
            namespaces: s.namespaces.clone(),
            selector,
        });
    }
    Ok(out)
}
