//! The status snapshot's publisher: counts the store's live jobs for the
//! host's [`Snapshot`](crate::dispatch::Snapshot) (where the dashboard and
//! the `max_queued` estimate read them) every [`SNAPSHOT_EVERY`], spaced
//! further by what counting costs ([`SNAPSHOT_COST_FACTOR`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::services::Service;
use crate::dispatch::Dispatcher;

/// How often the status snapshot is published while workers run, at most.
pub const SNAPSHOT_EVERY: Duration = Duration::from_secs(1);

/// A snapshot counts the store's live jobs, a scan of them: one that took
/// `t` is followed by the next no sooner than this many times `t` (so with
/// a large backlog, counting takes at most a twentieth of one store
/// connection's time, in each process).
pub const SNAPSHOT_COST_FACTOR: u32 = 20;

/// When the snapshot after one begun at `started` that took `took` is due.
fn next_snapshot(started: Instant, took: Duration) -> Instant {
    started + SNAPSHOT_EVERY.max(took.saturating_mul(SNAPSHOT_COST_FACTOR))
}

/// The publisher of one host.
pub(super) struct Publisher {
    pub(super) dispatcher: Arc<Dispatcher>,
}

impl Service for Publisher {
    const NAME: &'static str = "husk-snapshot";

    fn pass(&mut self) -> Duration {
        let started = Instant::now();
        if let Err(error) = self.dispatcher.publish_snapshot() {
            tracing::warn!(%error, "publishing the status snapshot failed");
        }
        next_snapshot(started, started.elapsed()).saturating_duration_since(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{SNAPSHOT_EVERY, next_snapshot};

    #[test]
    fn a_cheap_snapshot_is_taken_every_second_and_a_costly_one_is_spaced_by_its_cost() {
        let at = Instant::now();
        assert_eq!(next_snapshot(at, Duration::from_millis(3)), at + SNAPSHOT_EVERY);
        assert_eq!(next_snapshot(at, Duration::from_millis(50)), at + SNAPSHOT_EVERY, "20 × 50 ms is a second");
        assert_eq!(next_snapshot(at, Duration::from_millis(70)), at + Duration::from_millis(1400));
        assert_eq!(next_snapshot(at, Duration::from_millis(500)), at + Duration::from_secs(10));
    }
}
