//! When the next cycle runs: after a fixed interval, or at the next match of a 5-field cron
//! schedule (as people write it for CronJobs). The clock is passed in.
//!
//! A schedule that cannot run is refused at start rather than found out after the first
//! cycle: an interval under a second (Go durations allow `500ms`; a cycle needs at least a
//! second), and a cron schedule that never fires (`0 0 30 2 *`: no February has a 30th).

use chrono::{DateTime, Utc};
use croner::Cron;
use std::time::Duration;

#[derive(Debug, Clone)]
pub enum Schedule {
    /// One cycle, then exit.
    Once,
    Interval(Duration),
    Cron(Box<Cron>),
}

impl Schedule {
    /// From the `--descheduling-interval` (Go duration) and `--schedule` (cron) flags, seen
    /// at `now` (a cron schedule must fire after it).
    pub fn from_flags(
        interval: &str,
        cron: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Schedule, String> {
        let every = crate::policy::parse_go_duration(interval)
            .map_err(|e| format!("--descheduling-interval: {e}"))?;
        if !every.is_zero() && every < Duration::from_secs(1) {
            return Err(format!(
                "--descheduling-interval {interval}: shorter than a second; give 1s or more, or 0 to run one cycle and exit"
            ));
        }
        match cron {
            Some(c) if !every.is_zero() => Err(format!(
                "--schedule {c:?} and --descheduling-interval {interval} are both set; give one of them"
            )),
            Some(c) => {
                let fields = c.split_whitespace().count();
                if fields != 5 {
                    return Err(format!(
                        "--schedule {c:?}: expected 5 fields (minute hour day-of-month month day-of-week), found {fields}"
                    ));
                }
                let cron: Cron = c.parse().map_err(|e| {
                    format!(
                        "--schedule {c:?}: not a cron schedule ({e}); give minute hour day-of-month month day-of-week, e.g. \"*/30 * * * *\""
                    )
                })?;
                if !fires(&cron, now) {
                    return Err(format!(
                        "--schedule {c:?}: the schedule never fires (no date matches its day of the month and month); give a day that month has"
                    ));
                }
                Ok(Schedule::Cron(Box::new(cron)))
            }
            None if every.is_zero() => Ok(Schedule::Once),
            None => Ok(Schedule::Interval(every)),
        }
    }

    /// How long to wait after a cycle that started at `started`, seen at `now`.
    /// None: no further cycle.
    pub fn wait(&self, started: DateTime<Utc>, now: DateTime<Utc>) -> Option<Duration> {
        match self {
            Schedule::Once => None,
            Schedule::Interval(d) => {
                let next = started + chrono::Duration::from_std(*d).ok()?;
                Some((next - now).to_std().unwrap_or(Duration::ZERO))
            }
            Schedule::Cron(c) => {
                let next = c.find_next_occurrence(&now, false).ok()?;
                Some((next - now).to_std().unwrap_or(Duration::ZERO))
            }
        }
    }
}

/// How far ahead a 5-field schedule is looked at: every such schedule repeats within 28 years
/// (the calendar's cycle of weekdays and leap years), so one that has not fired by then never
/// will.
const LOOK_AHEAD_YEARS: i64 = 28;

/// Whether `cron` fires at some time after `now` (within [`LOOK_AHEAD_YEARS`]).
fn fires(cron: &Cron, now: DateTime<Utc>) -> bool {
    let horizon = now + chrono::Duration::days(366 * LOOK_AHEAD_YEARS);
    cron.find_next_occurrence(&now, false)
        .is_ok_and(|next| next <= horizon)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn interval_and_cron() {
        let t = Utc.with_ymd_and_hms(2026, 12, 1, 10, 2, 30).unwrap();
        assert!(matches!(
            Schedule::from_flags("0", None, t),
            Ok(Schedule::Once)
        ));
        let s = Schedule::from_flags("5m", None, t).unwrap();
        assert_eq!(
            s.wait(t, t + chrono::Duration::seconds(60)),
            Some(Duration::from_secs(240))
        );
        assert_eq!(
            s.wait(t, t + chrono::Duration::seconds(600)),
            Some(Duration::ZERO)
        );
        let c = Schedule::from_flags("0", Some("*/5 * * * *"), t).unwrap();
        assert_eq!(c.wait(t, t), Some(Duration::from_secs(150)));
        assert!(Schedule::from_flags("0", Some("*/5 * * *"), t).is_err());
        assert!(Schedule::from_flags("0", Some("61 * * * *"), t).is_err());
        assert!(Schedule::from_flags("1m", Some("* * * * *"), t).is_err());
        assert!(Schedule::from_flags("soon", None, t).is_err());
        assert_eq!(Schedule::Once.wait(t, t), None);
    }

    #[test]
    fn a_schedule_that_never_fires_is_refused() {
        let t = Utc.with_ymd_and_hms(2026, 12, 1, 10, 2, 30).unwrap();
        for never in ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *"] {
            let e = Schedule::from_flags("0", Some(never), t).unwrap_err();
            assert!(e.contains("never fires"), "{never}: {e}");
            assert!(e.starts_with("--schedule"), "{e}");
        }
        // February 29th fires, once in four years; and a day of the week with it fires
        // on that weekday (cron's day-of-month OR day-of-week).
        let leap = Schedule::from_flags("0", Some("0 0 29 2 *"), t).unwrap();
        let wait = leap.wait(t, t).unwrap();
        let next = t + chrono::Duration::from_std(wait).unwrap();
        assert_eq!(next, Utc.with_ymd_and_hms(2028, 2, 29, 0, 0, 0).unwrap());
        assert!(Schedule::from_flags("0", Some("0 0 30 2 1"), t).is_ok());
        // Words that are not a schedule: an error naming the flag.
        let e = Schedule::from_flags("0", Some("a b c d e"), t).unwrap_err();
        assert!(
            e.starts_with("--schedule \"a b c d e\": not a cron schedule"),
            "{e}"
        );
    }

    #[test]
    fn an_interval_under_a_second_is_refused() {
        let t = Utc.with_ymd_and_hms(2026, 12, 1, 10, 2, 30).unwrap();
        for short in ["500ms", "999ms", "1ns", "0.5s"] {
            let e = Schedule::from_flags(short, None, t).unwrap_err();
            assert!(
                e.starts_with(&format!(
                    "--descheduling-interval {short}: shorter than a second"
                )),
                "{e}"
            );
        }
        // 0 still means one cycle; fractions above a second are kept, as Go keeps them.
        assert!(matches!(
            Schedule::from_flags("0s", None, t),
            Ok(Schedule::Once)
        ));
        match Schedule::from_flags("1500ms", None, t).unwrap() {
            Schedule::Interval(d) => assert_eq!(d, Duration::from_millis(1500)),
            other => panic!("{other:?}"),
        }
    }
}
