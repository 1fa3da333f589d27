//! Periodic jobs: a topic's schedule (a cron line, in UTC or a named time
//! zone) makes one job per tick, with a fixed input.
//!
//! Every process running the topic enqueues its ticks, each under the
//! idempotency key of its topic and tick time ([`Schedule::key`]): however
//! many processes share the store, and however far apart their clocks, a
//! tick makes one job. A process enqueues the ticks it missed while it was
//! down, back to its schedule's catch-up window, and a tick's job is not
//! run before the tick's time.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, TimeZone, Utc};
use croner::Cron;

/// The default catch-up window: ticks missed up to this long ago are
/// enqueued when a process starts.
pub const DEFAULT_CATCH_UP: Duration = Duration::from_secs(60);

/// Most ticks one look enqueues (a long catch-up window of a per-second
/// schedule is enqueued over several looks).
pub const MAX_TICKS_PER_LOOK: usize = 1_000;

/// Why a schedule was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The cron line does not parse.
    #[error("`{line}` is not a cron line (minute hour day month weekday, an optional leading seconds field): {reason}")]
    Cron {
        /// The line.
        line: String,
        /// Why.
        reason: String,
    },
    /// The time zone is not one the IANA database names.
    #[error("`{0}` is not a time zone (an IANA name such as `Europe/Berlin`, or `UTC`)")]
    TimeZone(String),
    /// The catch-up window is zero.
    #[error("the catch-up window must be longer than zero")]
    CatchUp,
}

/// A topic's schedule: when its periodic jobs are due, and their input.
#[derive(Debug, Clone)]
pub struct Schedule {
    line: String,
    cron: Cron,
    zone: chrono_tz::Tz,
    input: Vec<u8>,
    catch_up: Duration,
}

impl Schedule {
    /// A schedule of `line` (five fields, or six with seconds first) in
    /// `zone` (an IANA name; `None`: UTC), each tick making a job of
    /// `input`, ticks missed up to `catch_up` ago enqueued at start.
    ///
    /// # Errors
    ///
    /// [`ScheduleError`] naming what is wrong.
    pub fn new(line: &str, zone: Option<&str>, input: Vec<u8>, catch_up: Duration) -> Result<Self, ScheduleError> {
        let cron = Cron::new(line)
            .with_seconds_optional()
            .parse()
            .map_err(|e| ScheduleError::Cron { line: line.to_owned(), reason: e.to_string() })?;
        let zone = match zone {
            None => chrono_tz::UTC,
            Some(name) => name.parse().map_err(|_| ScheduleError::TimeZone(name.to_owned()))?,
        };
        if catch_up.is_zero() {
            return Err(ScheduleError::CatchUp);
        }
        Ok(Self { line: line.to_owned(), cron, zone, input, catch_up })
    }

    /// The cron line.
    pub fn line(&self) -> &str {
        &self.line
    }

    /// The time zone's name.
    pub fn zone(&self) -> &str {
        self.zone.name()
    }

    /// The input of each tick's job.
    pub fn input(&self) -> &[u8] {
        &self.input
    }

    /// How far back a starting process enqueues missed ticks.
    pub fn catch_up(&self) -> Duration {
        self.catch_up
    }

    /// The ticks after `after` up to `until` (inclusive), oldest first, at
    /// most [`MAX_TICKS_PER_LOOK`].
    pub fn ticks(&self, after: SystemTime, until: SystemTime) -> Vec<SystemTime> {
        let mut ticks = Vec::new();
        let mut cursor = self.zone.from_utc_datetime(&DateTime::<Utc>::from(after).naive_utc());
        while ticks.len() < MAX_TICKS_PER_LOOK {
            let Ok(next) = self.cron.find_next_occurrence(&cursor, false) else { break };
            let at = SystemTime::from(next.with_timezone(&Utc));
            if at > until {
                break;
            }
            ticks.push(at);
            cursor = next;
        }
        ticks
    }

    /// The idempotency key of `topic`'s job of the tick at `tick`: one job
    /// per tick across processes. (API keys start with a digit: the two
    /// never meet.)
    pub fn key(topic: &str, tick: SystemTime) -> String {
        let millis = tick.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_millis();
        format!("schedule:{topic}:{millis}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> SystemTime {
        DateTime::parse_from_rfc3339(text).unwrap().into()
    }

    #[test]
    fn ticks_follow_the_line_in_its_zone_and_bad_schedules_are_refused() {
        let every_five = Schedule::new("*/5 * * * *", None, b"{}".to_vec(), DEFAULT_CATCH_UP).unwrap();
        let ticks = every_five.ticks(at("2026-12-08T10:00:00Z"), at("2026-12-08T10:15:00Z"));
        assert_eq!(ticks, [at("2026-12-08T10:05:00Z"), at("2026-12-08T10:10:00Z"), at("2026-12-08T10:15:00Z")]);
        let seconds = Schedule::new("*/20 * * * * *", None, Vec::new(), DEFAULT_CATCH_UP).unwrap();
        assert_eq!(seconds.ticks(at("2026-12-08T10:00:00Z"), at("2026-12-08T10:01:00Z")).len(), 3);
        // 08:00 in Berlin is 07:00 UTC in winter.
        let berlin = Schedule::new("0 8 * * *", Some("Europe/Berlin"), Vec::new(), DEFAULT_CATCH_UP).unwrap();
        assert_eq!(berlin.ticks(at("2026-12-08T00:00:00Z"), at("2026-12-09T00:00:00Z")), [at("2026-12-08T07:00:00Z")]);
        assert_eq!(berlin.zone(), "Europe/Berlin");
        let busy = Schedule::new("* * * * * *", None, Vec::new(), DEFAULT_CATCH_UP).unwrap();
        assert_eq!(busy.ticks(at("2026-12-08T00:00:00Z"), at("2026-12-09T00:00:00Z")).len(), MAX_TICKS_PER_LOOK);
        assert_eq!(Schedule::key("t", at("1970-01-01T00:00:01Z")), "schedule:t:1000");

        for (line, zone) in
            [("*/5 * * *", None), ("61 * * * *", None), ("every minute", None), ("* * * * *", Some("Mars/Base"))]
        {
            assert!(Schedule::new(line, zone, Vec::new(), DEFAULT_CATCH_UP).is_err(), "{line} {zone:?}");
        }
        assert_eq!(Schedule::new("* * * * *", None, Vec::new(), Duration::ZERO).unwrap_err(), ScheduleError::CatchUp);
    }
}
