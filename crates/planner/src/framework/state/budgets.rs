//! The policy's `evictionBudgets` within one cycle: which budgets apply at the cycle's time,
//! how many evictions each allows, how many earlier cycles spent within its period (from the
//! [`History`]) and how many this cycle has planned. Part of the [`super::Ledger`].

use super::EvictError;
use crate::framework::History;
use crate::policy::EvictionBudget;
use crate::snapshot::{ClusterSnapshot, PodId};

/// One budget that applies this cycle.
#[derive(Clone)]
struct Held<'s> {
    rule: &'s EvictionBudget,
    /// Evictions it allows (its count, or its percentage of the pods in scope).
    allowed: u32,
    /// Evictions spent: earlier cycles within its period, then this cycle's.
    spent: u32,
}

/// The budgets that apply to one cycle, and what is spent of each.
#[derive(Clone, Default)]
pub(crate) struct Budgets<'s> {
    /// Every budget of the policy.
    rules: &'s [EvictionBudget],
    /// Those that apply this cycle.
    held: Vec<Held<'s>>,
}

impl<'s> Budgets<'s> {
    /// The budgets of `rules` that apply at `now`, with what `history` says earlier cycles
    /// spent of each within its period.
    pub(crate) fn new(
        snap: &ClusterSnapshot,
        rules: &'s [EvictionBudget],
        now: i64,
        history: &History,
    ) -> Self {
        let held = rules
            .iter()
            .filter(|r| r.applies_at(now))
            .map(|rule| Held {
                rule,
                allowed: rule.allowed(snap),
                spent: rule
                    .period
                    .map_or(0, |period| history.budget_spent(&rule.name, period, now)),
            })
            .collect();
        Budgets { rules, held }
    }

    /// Whether `pods`, planned together by `plugin` of `profile`, fit every budget that
    /// applies. When some do not, the error names the smallest of them (a zero budget first).
    pub(crate) fn admit(
        &self,
        snap: &ClusterSnapshot,
        pods: &[PodId],
        profile: &str,
        plugin: &str,
    ) -> Result<(), EvictError> {
        let over = self
            .held
            .iter()
            .filter_map(|h| {
                let n = pods
                    .iter()
                    .filter(|&&p| h.rule.covers(profile, plugin, snap.pod(p)))
                    .count() as u32;
                (n > 0 && h.spent + n > h.allowed).then_some((h, n))
            })
            .min_by_key(|(h, _)| h.allowed);
        let Some((h, n)) = over else {
            return Ok(());
        };
        let budget = h.rule.describe(h.allowed);
        let spent = match (h.allowed, h.rule.period) {
            (0, _) => "it allows none now".to_string(),
            (_, Some(_)) => format!("{} of {} spent within its period", h.spent, h.allowed),
            (_, None) => format!("{} of {} spent this cycle", h.spent, h.allowed),
        };
        let what = if n == 1 {
            String::new()
        } else {
            format!(" ({n} evictions together)")
        };
        Err(EvictError::EvictionBudget(format!(
            "held back by {budget}{what}: {spent}"
        )))
    }

    /// Spends one eviction of `pod` by `plugin` of `profile` from every budget that applies
    /// and counts it; returns the names of the policy's budgets with a period that count it
    /// (whether their window is open or not: the period remembers it for later cycles).
    pub(crate) fn spend(
        &mut self,
        snap: &ClusterSnapshot,
        pod: PodId,
        profile: &str,
        plugin: &str,
    ) -> Vec<String> {
        let p = snap.pod(pod);
        for h in &mut self.held {
            if h.rule.covers(profile, plugin, p) {
                h.spent += 1;
            }
        }
        self.rules
            .iter()
            .filter(|r| r.period.is_some() && r.covers(profile, plugin, p))
            .map(|r| r.name.clone())
            .collect()
    }
}
