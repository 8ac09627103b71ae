//! When continuous mode runs a cycle with `--cycle-on-change`: a step function over states,
//! tested without a server or a clock (the runner tells it the time).
//!
//! A change the watch sees that can create work (a node added, Ready, schedulable, its
//! taints or labels changed; a pod Pending, past MakeRoomForPendingPods' threshold when that
//! plugin is configured; a PodDisruptionBudget or a PodGroup changed) asks for a cycle. The
//! cycle starts `debounce` after the first such change (later ones within the window ride
//! along), and never sooner than `min_gap` after the previous cycle started. The interval is
//! the upper bound: a cycle is due `interval` after the previous one whatever the watch saw.
//! A cycle due by the interval on a model no watch event changed since the last cycle, when
//! nothing else can make its plan differ (no rule that depends on the clock or on measured
//! usage, no memory of recent evictions), is skipped and counted instead.

use std::time::{Duration, Instant};

/// The timing of `--cycle-on-change`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OnChange {
    /// Changes within this window after the first coalesce into one cycle.
    pub debounce: Duration,
    /// The least time between the starts of two cycles.
    pub min_gap: Duration,
    /// The most time between the starts of two cycles (`--descheduling-interval`).
    pub interval: Duration,
}

/// Why a cycle runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A change the watch saw can create work.
    Change,
    /// The interval passed.
    Interval,
}

/// What to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Run a cycle now.
    Run(Cause),
    /// A cycle was due by the interval, but the model is unchanged: skip it (counted), and
    /// wait for the next.
    SkipUnchanged,
    /// Wait until this instant, or until the watch says something.
    WaitUntil(Instant),
}

/// The state between cycles.
#[derive(Debug, Clone)]
pub struct Trigger {
    cfg: OnChange,
    /// When the last cycle started (or was skipped).
    last: Instant,
    /// When work is known to exist (or will, such as a pending pod crossing its threshold),
    /// not covered by a cycle yet; sorted, each once.
    work: Vec<Instant>,
    /// Whether a watch event changed the model since the last cycle.
    changed: bool,
    /// Whether the first cycle has run (it runs at once).
    started: bool,
}

impl Trigger {
    pub fn new(cfg: OnChange, now: Instant) -> Trigger {
        Trigger {
            cfg,
            last: now,
            work: Vec::new(),
            changed: false,
            started: false,
        }
    }

    /// A watch event changed the model (whether or not it can create work).
    pub fn changed(&mut self) {
        self.changed = true;
    }

    /// Work exists from `at` on (a change that can create work, at the time it was seen; or
    /// a later time, when a pending pod crosses the threshold).
    pub fn work_at(&mut self, at: Instant) {
        if let Err(i) = self.work.binary_search(&at) {
            self.work.insert(i, at);
        }
    }

    /// When a cycle is due for the earliest work known, if any.
    fn work_due(&self) -> Option<Instant> {
        let first = *self.work.first()?;
        Some((first + self.cfg.debounce).max(self.last + self.cfg.min_gap))
    }

    /// What to do at `now`. `time_matters`: the plan may differ on an unchanged model
    /// (rules that depend on the clock or on measured usage, a memory of recent evictions),
    /// so a cycle due by the interval is never skipped.
    pub fn step(&mut self, now: Instant, time_matters: bool) -> Step {
        if !self.started {
            self.started = true;
            self.ran(now);
            return Step::Run(Cause::Interval);
        }
        if self.work_due().is_some_and(|due| now >= due) {
            self.ran(now);
            return Step::Run(Cause::Change);
        }
        let bound = self.last + self.cfg.interval;
        if now >= bound {
            if self.changed || time_matters {
                self.ran(now);
                return Step::Run(Cause::Interval);
            }
            // Skipped: the next one is due an interval from now; work later than now stays.
            self.last = now;
            return Step::SkipUnchanged;
        }
        Step::WaitUntil(match self.work_due() {
            Some(due) => due.min(bound),
            None => bound,
        })
    }

    /// A cycle starts at `at`: what was seen until now is in its model.
    fn ran(&mut self, at: Instant) {
        self.last = at;
        self.changed = false;
        self.work.retain(|&w| w > at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn cfg() -> OnChange {
        OnChange {
            debounce: ms(200),
            min_gap: ms(1000),
            interval: ms(600_000),
        }
    }

    /// A trigger whose first cycle ran at t0.
    fn started(t0: Instant) -> Trigger {
        let mut t = Trigger::new(cfg(), t0);
        assert_eq!(t.step(t0, false), Step::Run(Cause::Interval));
        t
    }

    #[test]
    fn the_first_cycle_runs_at_once_then_nothing_until_the_interval() {
        let t0 = Instant::now();
        let mut t = started(t0);
        assert_eq!(
            t.step(t0 + ms(5000), false),
            Step::WaitUntil(t0 + ms(600_000))
        );
    }

    #[test]
    fn changes_within_the_debounce_window_coalesce_into_one_cycle() {
        let t0 = Instant::now();
        let mut t = started(t0);
        let first = t0 + ms(5000);
        t.changed();
        t.work_at(first);
        assert_eq!(t.step(first, false), Step::WaitUntil(first + ms(200)));
        // More work within the window: the cycle is not put off.
        t.changed();
        t.work_at(first + ms(150));
        assert_eq!(
            t.step(first + ms(150), false),
            Step::WaitUntil(first + ms(200))
        );
        assert_eq!(t.step(first + ms(200), false), Step::Run(Cause::Change));
        // Both were covered by it: nothing more until the interval.
        assert_eq!(
            t.step(first + ms(300), false),
            Step::WaitUntil(first + ms(200) + ms(600_000))
        );
    }

    #[test]
    fn cycles_keep_the_minimum_gap() {
        let t0 = Instant::now();
        let mut t = started(t0);
        // Work 100 ms after the first cycle: debounced to 300 ms, held to the 1 s gap.
        t.work_at(t0 + ms(100));
        assert_eq!(t.step(t0 + ms(100), false), Step::WaitUntil(t0 + ms(1000)));
        assert_eq!(t.step(t0 + ms(999), false), Step::WaitUntil(t0 + ms(1000)));
        assert_eq!(t.step(t0 + ms(1000), false), Step::Run(Cause::Change));
        // A burst of changes right after: one cycle, a gap later.
        for i in 1..=20 {
            t.work_at(t0 + ms(1000 + i * 10));
        }
        assert_eq!(t.step(t0 + ms(1200), false), Step::WaitUntil(t0 + ms(2000)));
        assert_eq!(t.step(t0 + ms(2000), false), Step::Run(Cause::Change));
        assert_eq!(
            t.step(t0 + ms(2001), false),
            Step::WaitUntil(t0 + ms(2000) + ms(600_000))
        );
    }

    #[test]
    fn work_due_later_waits_for_its_time_and_survives_cycles_before_it() {
        let t0 = Instant::now();
        let mut t = started(t0);
        // A pending pod crosses the threshold in a minute.
        let later = t0 + ms(60_000);
        t.work_at(later);
        assert_eq!(t.step(t0 + ms(10), false), Step::WaitUntil(later + ms(200)));
        // Another change runs a cycle before then; the pending pod's time is kept.
        t.work_at(t0 + ms(5000));
        assert_eq!(t.step(t0 + ms(5200), false), Step::Run(Cause::Change));
        assert_eq!(
            t.step(t0 + ms(5300), false),
            Step::WaitUntil(later + ms(200))
        );
        assert_eq!(t.step(later + ms(200), false), Step::Run(Cause::Change));
    }

    #[test]
    fn the_interval_is_the_upper_bound_and_an_unchanged_model_is_skipped() {
        let t0 = Instant::now();
        let mut t = started(t0);
        let bound = t0 + ms(600_000);
        // Nothing changed: skipped, and the next is an interval later.
        assert_eq!(t.step(bound, false), Step::SkipUnchanged);
        assert_eq!(t.step(bound, false), Step::WaitUntil(bound + ms(600_000)));
        // A change that creates no work (a pod's status): the interval's cycle runs.
        t.changed();
        assert_eq!(
            t.step(bound + ms(1), false),
            Step::WaitUntil(bound + ms(600_000))
        );
        assert_eq!(
            t.step(bound + ms(600_000), false),
            Step::Run(Cause::Interval)
        );
        // Unchanged, but the plan depends on the clock: it runs too.
        let next = bound + ms(1_200_000);
        assert_eq!(t.step(next, true), Step::Run(Cause::Interval));
    }

    #[test]
    fn work_never_waits_longer_than_the_interval() {
        let cfg = OnChange {
            debounce: ms(500),
            min_gap: ms(5000),
            interval: ms(2000),
        };
        let t0 = Instant::now();
        let mut t = Trigger::new(cfg, t0);
        t.step(t0, false);
        t.changed();
        t.work_at(t0 + ms(100));
        // The gap would say 5 s; the interval says 2 s.
        assert_eq!(t.step(t0 + ms(100), false), Step::WaitUntil(t0 + ms(2000)));
        assert_eq!(t.step(t0 + ms(2000), false), Step::Run(Cause::Interval));
    }
}
