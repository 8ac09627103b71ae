//! Memory across the cycles of a continuous run: what the runner carries from one cycle's
//! plan to the next (the planner itself stays a pure function of its inputs).

use std::collections::BTreeMap;

/// What earlier cycles of a continuous run leave for the next: for each plugin (by
/// `profile/plugin`), how many consecutive cycles each node was overutilized.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    pub over_streak: BTreeMap<String, BTreeMap<String, u32>>,
}

impl History {
    /// Consecutive earlier cycles the node was overutilized for this plugin.
    pub fn streak(&self, key: &str, node: &str) -> u32 {
        self.over_streak
            .get(key)
            .and_then(|m| m.get(node))
            .copied()
            .unwrap_or(0)
    }

    /// The history after a cycle that observed `over` (plugin key → nodes overutilized this
    /// cycle). A plugin that classified nodes this cycle replaces its streaks (nodes not over
    /// now start again from zero); a plugin that did not (it skipped the cycle) loses them,
    /// so a gap in the measurements never counts as "still over".
    pub fn advance(&self, over: &BTreeMap<String, Vec<String>>) -> History {
        let mut next = History::default();
        for (key, nodes) in over {
            let streaks = next.over_streak.entry(key.clone()).or_default();
            for n in nodes {
                streaks.insert(n.clone(), self.streak(key, n) + 1);
            }
        }
        next
    }
}
