//! The scheduler: enqueues the periodic jobs of the topics with a
//! [`Schedule`], every [`LOOK_EVERY`] (real time: it paces the looks; which
//! ticks are due is decided by the dispatcher's clock).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::services::Service;
use crate::dispatch::{Dispatcher, Enqueue, EnqueueJob};
use crate::periodic::Schedule;

/// How often the scheduler looks for due ticks.
pub(super) const LOOK_EVERY: Duration = Duration::from_millis(200);

/// One topic's schedule and the last tick this process enqueued.
pub(super) struct Scheduled {
    pub(super) topic: String,
    pub(super) schedule: Schedule,
    /// Ticks after this one are due; `None` before the first look (which
    /// starts at the catch-up window).
    pub(super) enqueued_through: Option<SystemTime>,
}

/// The scheduler of one host.
pub(super) struct Scheduler {
    pub(super) dispatcher: Arc<Dispatcher>,
    pub(super) topics: Vec<Scheduled>,
}

impl Service for Scheduler {
    const NAME: &'static str = "husk-scheduler";

    fn pass(&mut self) -> Duration {
        self.look();
        LOOK_EVERY
    }
}

impl Scheduler {
    /// One look: enqueues every topic's ticks due since its last look (or
    /// within its catch-up window), each keyed by its tick, not to run
    /// before it. A tick whose enqueue fails is tried again at the next
    /// look, while it is within the catch-up window.
    pub(super) fn look(&mut self) {
        let now = self.dispatcher.clock().now();
        for scheduled in &mut self.topics {
            let window = now.checked_sub(scheduled.schedule.catch_up()).unwrap_or(SystemTime::UNIX_EPOCH);
            let after = scheduled.enqueued_through.map_or(window, |through| through.max(window));
            let ticks = scheduled.schedule.ticks(after, now);
            let Some(&last) = ticks.last() else {
                scheduled.enqueued_through = Some(after);
                continue;
            };
            let jobs = ticks
                .iter()
                .map(|&tick| EnqueueJob {
                    input: scheduled.schedule.input().to_vec(),
                    key: Some(Schedule::key(&scheduled.topic, tick)),
                    not_before: Some(tick),
                    priority: 0,
                })
                .collect();
            match self.dispatcher.submit(Enqueue::jobs(scheduled.topic.clone(), jobs)) {
                Ok(enqueued) => {
                    let created = enqueued.iter().filter(|e| e.created).count();
                    if created > 0 {
                        tracing::debug!(topic = %scheduled.topic, created, "periodic jobs enqueued");
                    }
                    scheduled.enqueued_through = Some(last);
                }
                Err(error) => {
                    tracing::warn!(topic = %scheduled.topic, %error, "enqueueing periodic jobs failed: tried again");
                    scheduled.enqueued_through = Some(after);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::{Scheduled, Scheduler};
    use crate::clock::{Clock, ManualClock};
    use crate::dispatch::{Dispatcher, TopicPolicy};
    use crate::outcome::NullSink;
    use crate::periodic::Schedule;
    use crate::store::{JobStore, ListFilter, MemoryStore};

    /// A scheduler of topic `t`, every 10 s with a 30 s catch-up window, on
    /// `store` (shared: another process) at `clock`.
    fn scheduler(store: &Arc<MemoryStore>, clock: &ManualClock) -> Scheduler {
        let dispatcher = Dispatcher::new(store.clone(), Arc::new(clock.clone()), Arc::new(NullSink), None);
        dispatcher.set_topic("t", TopicPolicy::default());
        let schedule = Schedule::new("*/10 * * * * *", None, b"{\"n\":1}".to_vec(), Duration::from_secs(30)).unwrap();
        Scheduler { dispatcher, topics: vec![Scheduled { topic: "t".into(), schedule, enqueued_through: None }] }
    }

    /// How many jobs the store holds.
    fn jobs(store: &MemoryStore) -> usize {
        let store: &dyn JobStore = store;
        store.queries().unwrap().list(&ListFilter { limit: Some(10_000), ..ListFilter::default() }).unwrap().len()
    }

    #[test]
    fn each_tick_makes_one_job_across_processes_and_a_restart_catches_up_its_window() {
        let store = Arc::new(MemoryStore::new());
        let clock = ManualClock::new(); // on a minute: a tick
        let (mut one, mut two) = (scheduler(&store, &clock), scheduler(&store, &clock));
        // The first look enqueues the catch-up window's ticks (-30 s is
        // excluded, -20, -10 and now are in): both processes, one job each.
        one.look();
        two.look();
        assert_eq!(jobs(&store), 3);
        for _ in 0..6 {
            clock.advance(Duration::from_secs(5));
            one.look();
            two.look();
            one.look();
        }
        assert_eq!(jobs(&store), 6, "30 s more: three ticks, each once");
        let queued = (store.as_ref() as &dyn JobStore).queries().unwrap().list(&ListFilter::default()).unwrap();
        assert!(queued.iter().all(|job| job.not_before.is_none_or(|at| at <= clock.now())), "due at their tick");
        // A process down for 25 s catches up; one down for 95 s catches up
        // its window only.
        clock.advance(Duration::from_secs(25));
        let mut restarted = scheduler(&store, &clock);
        restarted.look();
        assert_eq!(jobs(&store), 8, "the two ticks missed");
        clock.advance(Duration::from_secs(95));
        let mut late = scheduler(&store, &clock);
        late.look();
        assert_eq!(jobs(&store), 11, "of the ten ticks missed, the three of the window");
    }
}
