//! When the next cycle runs: after a fixed interval, or at the next match of a 5-field cron
//! schedule (as people write it for CronJobs). The clock is passed in.

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
    /// From the `--descheduling-interval` (Go duration) and `--schedule` (cron) flags.
    pub fn from_flags(interval: &str, cron: Option<&str>) -> Result<Schedule, String> {
        let secs = crate::policy::parse_duration(interval)
            .map_err(|e| format!("--descheduling-interval: {e}"))?;
        match cron {
            Some(c) if secs > 0 => Err(format!(
                "--schedule {c:?} and --descheduling-interval {interval} are both set; give one of them"
            )),
            Some(c) => {
                let fields = c.split_whitespace().count();
                if fields != 5 {
                    return Err(format!(
                        "--schedule {c:?}: expected 5 fields (minute hour day-of-month month day-of-week), found {fields}"
                    ));
                }
                let cron: Cron = c
                    .parse()
                    .map_err(|e| format!("--schedule {c:?}: {e}"))?;
                Ok(Schedule::Cron(Box::new(cron)))
            }
            None if secs == 0 => Ok(Schedule::Once),
            None => Ok(Schedule::Interval(Duration::from_secs(secs as u64))),
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

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn interval_and_cron() {
        let t = Utc.with_ymd_and_hms(2026, 12, 1, 10, 2, 30).unwrap();
        assert!(matches!(
            Schedule::from_flags("0", None),
            Ok(Schedule::Once)
        ));
        let s = Schedule::from_flags("5m", None).unwrap();
        assert_eq!(
            s.wait(t, t + chrono::Duration::seconds(60)),
            Some(Duration::from_secs(240))
        );
        assert_eq!(
            s.wait(t, t + chrono::Duration::seconds(600)),
            Some(Duration::ZERO)
        );
        let c = Schedule::from_flags("0", Some("*/5 * * * *")).unwrap();
        assert_eq!(c.wait(t, t), Some(Duration::from_secs(150)));
        assert!(Schedule::from_flags("0", Some("*/5 * * *")).is_err());
        assert!(Schedule::from_flags("0", Some("61 * * * *")).is_err());
        assert!(Schedule::from_flags("1m", Some("* * * * *")).is_err());
        assert!(Schedule::from_flags("soon", None).is_err());
        assert_eq!(Schedule::Once.wait(t, t), None);
    }
}
