//! What this process saw in the last hour, minute by minute, per topic:
//! terminal outcomes by kind and kills by reason — for the dashboard's
//! overview and its chart. Sixty one-minute buckets per topic, reused as
//! the minutes pass; nothing older is kept.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

/// Minutes kept.
pub const MINUTES: usize = 60;

/// Outcomes of one minute (or a sum of minutes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Completed.
    pub completed: u64,
    /// Ended with a business error or a business status.
    pub business: u64,
    /// Failed (incidents).
    pub failed: u64,
    /// Cancelled.
    pub cancelled: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.completed += other.completed;
        self.business += other.business;
        self.failed += other.failed;
        self.cancelled += other.cancelled;
    }

    /// All outcomes counted.
    pub fn total(&self) -> u64 {
        self.completed + self.business + self.failed + self.cancelled
    }
}

/// One minute of one topic.
#[derive(Debug, Clone, Default)]
struct Minute {
    /// Which minute (since the epoch) this bucket holds.
    at: u64,
    counts: Counts,
    kills: BTreeMap<&'static str, u64>,
}

/// A topic's last hour, as [`Recent::summary`] gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// The minute now running.
    pub last_minute: Counts,
    /// The last 60 minutes.
    pub last_hour: Counts,
    /// Each of the last 60 minutes, oldest first (the last is now's).
    pub per_minute: Vec<Counts>,
    /// Kills in the last hour, by reason.
    pub kills: BTreeMap<&'static str, u64>,
}

/// The last hour of every topic this process ran.
#[derive(Debug, Default)]
pub struct Recent {
    topics: Mutex<HashMap<String, Vec<Minute>>>,
}

fn minute_of(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() / 60
}

impl Recent {
    /// Nothing seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on `topic`'s bucket for the minute of `at`.
    fn with_minute(&self, topic: &str, at: SystemTime, f: impl FnOnce(&mut Minute)) {
        let minute = minute_of(at);
        let mut topics = self.topics.lock();
        let ring = match topics.get_mut(topic) {
            Some(ring) => ring,
            None => topics.entry(topic.to_owned()).or_insert_with(|| vec![Minute::default(); MINUTES]),
        };
        let slot = &mut ring[(minute % MINUTES as u64) as usize];
        if slot.at != minute {
            *slot = Minute { at: minute, ..Minute::default() };
        }
        f(slot);
    }

    /// Counts a terminal outcome of `kind` (see `Outcome::kind`) at `at`.
    pub fn outcome(&self, topic: &str, kind: &str, at: SystemTime) {
        self.with_minute(topic, at, |m| match kind {
            "completed" => m.counts.completed += 1,
            "failed" => m.counts.failed += 1,
            "cancelled" => m.counts.cancelled += 1,
            _ => m.counts.business += 1,
        });
    }

    /// Counts an attempt killed for `reason` at `at`.
    pub fn kill(&self, topic: &str, reason: &'static str, at: SystemTime) {
        self.with_minute(topic, at, |m| *m.kills.entry(reason).or_default() += 1);
    }

    /// `topic`'s last hour as of `now`.
    pub fn summary(&self, topic: &str, now: SystemTime) -> Summary {
        let now = minute_of(now);
        let topics = self.topics.lock();
        let mut summary = Summary { per_minute: vec![Counts::default(); MINUTES], ..Summary::default() };
        let Some(ring) = topics.get(topic) else { return summary };
        for minute in ring.iter().filter(|m| m.at <= now && now - m.at < MINUTES as u64) {
            let age = (now - minute.at) as usize;
            summary.per_minute[MINUTES - 1 - age] = minute.counts;
            summary.last_hour.add(&minute.counts);
            if age == 0 {
                summary.last_minute = minute.counts;
            }
            for (reason, count) in &minute.kills {
                *summary.kills.entry(reason).or_default() += count;
            }
        }
        summary
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::{MINUTES, Recent};

    #[test]
    fn an_hour_is_kept_minute_by_minute_and_older_minutes_drop_out() {
        let recent = Recent::new();
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000 * 60);
        let minute = |n: u64| t0 + Duration::from_secs(n * 60);
        recent.outcome("t", "completed", minute(0));
        recent.outcome("t", "completed", minute(0) + Duration::from_secs(59));
        recent.outcome("t", "failed", minute(10));
        recent.outcome("t", "business-error", minute(10));
        recent.kill("t", "timeout", minute(10));
        recent.outcome("other", "completed", minute(10));

        let at_10 = recent.summary("t", minute(10));
        assert_eq!((at_10.last_minute.failed, at_10.last_minute.business, at_10.last_minute.completed), (1, 1, 0));
        assert_eq!(at_10.last_hour.total(), 4);
        assert_eq!(at_10.per_minute[MINUTES - 11].completed, 2, "minute 0, ten minutes back");
        assert_eq!(at_10.kills.get("timeout"), Some(&1));

        // An hour after minute 0 it is gone; minute 10 is still there.
        let at_60 = recent.summary("t", minute(60));
        assert_eq!(at_60.last_hour.completed, 0);
        assert_eq!(at_60.last_hour.failed, 1);
        assert_eq!(at_60.last_minute.total(), 0);
        // A new minute 60 reuses minute 0's bucket, from zero.
        recent.outcome("t", "cancelled", minute(60));
        let again = recent.summary("t", minute(60));
        assert_eq!((again.last_minute.cancelled, again.last_minute.completed), (1, 0));
        assert_eq!(recent.summary("nobody", minute(60)).last_hour.total(), 0);
    }
}
