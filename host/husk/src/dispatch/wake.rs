//! Who to wake when jobs may have become fetchable: a fetcher of one topic
//! sleeps on that topic's [`Notifier`], so an enqueue wakes its topic's
//! fetchers only, not every worker of every topic, and only as many of them
//! as it made jobs (each woken fetcher costs a store query, and one that
//! finds nothing costs the most). A fetcher still busy with a fetch when
//! jobs come takes one of their wakes when it is done, instead of a sleeper
//! (see [`Notifier`]): so under a stream of single enqueues, each job costs
//! one more fetch, not one for every fetcher busy meanwhile. What concerns
//! every topic — the clock moved by hand, a shutdown, a re-arm or release,
//! permits given back, another process's notification — wakes all of them.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::clock::{Clock, Notifier};

/// The notifiers of a dispatcher's fetchers, by topic.
#[derive(Debug)]
pub(super) struct Wakers {
    /// For fetchers of several topics at once (woken by every wake).
    any: Arc<Notifier>,
    /// One per topic a fetcher has waited on.
    topics: RwLock<HashMap<String, Arc<Notifier>>>,
    clock: Arc<dyn Clock>,
}

impl Wakers {
    pub(super) fn new(clock: Arc<dyn Clock>) -> Self {
        let any = Notifier::new();
        clock.subscribe(&any);
        Self { any, topics: RwLock::new(HashMap::new()), clock }
    }

    /// The notifier a fetch of `topics` waits on.
    pub(super) fn for_fetch(&self, topics: &[String]) -> Arc<Notifier> {
        let [topic] = topics else { return self.any.clone() };
        if let Some(notifier) = self.topics.read().get(topic) {
            return notifier.clone();
        }
        self.topics
            .write()
            .entry(topic.clone())
            .or_insert_with(|| {
                let notifier = Notifier::new();
                self.clock.subscribe(&notifier);
                notifier
            })
            .clone()
    }

    /// Wakes fetchers of `topic` for `jobs` new fetchable jobs: as many of
    /// its fetchers, asleep or on their way to sleep, as there are jobs,
    /// since one fetch claims at least one (a fetcher woken for nothing
    /// still costs a store query), and every fetcher of several topics.
    pub(super) fn topic(&self, topic: &str, jobs: u64) {
        if let Some(notifier) = self.topics.read().get(topic) {
            notifier.notify_some(jobs);
        }
        self.any.notify();
    }

    /// How many fetchers of `topic` alone sleep now.
    pub(super) fn sleeping(&self, topic: &str) -> u64 {
        self.topics.read().get(topic).map_or(0, |notifier| notifier.sleepers() as u64)
    }

    /// Wakes every fetcher.
    pub(super) fn all(&self) {
        for notifier in self.topics.read().values() {
            notifier.notify();
        }
        self.any.notify();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::Wakers;
    use crate::clock::{Clock, ManualClock};

    #[test]
    fn a_topics_wake_reaches_its_fetchers_and_not_another_topics() {
        let clock = ManualClock::new();
        let wakers = Wakers::new(Arc::new(clock.clone()) as Arc<dyn Clock>);
        let (a, b) = (["a".to_owned()], ["b".to_owned()]);
        let (on_a, on_b, on_both) =
            (wakers.for_fetch(&a), wakers.for_fetch(&b), wakers.for_fetch(&["a".into(), "b".into()]));
        assert!(Arc::ptr_eq(&on_a, &wakers.for_fetch(&a)), "one notifier per topic");
        let seen = |n: &crate::clock::Notifier| n.seen();
        let (a0, b0, both0) = (seen(&on_a), seen(&on_b), seen(&on_both));
        wakers.topic("a", 1);
        assert_ne!(seen(&on_a), a0);
        assert_eq!(seen(&on_b), b0, "b's fetchers sleep on");
        assert_ne!(seen(&on_both), both0, "a fetcher of a and b wakes");
        let (a1, b1) = (seen(&on_a), seen(&on_b));
        wakers.all();
        assert!(seen(&on_a) != a1 && seen(&on_b) != b1);
        let b2 = seen(&on_b);
        clock.advance(std::time::Duration::from_secs(1));
        assert_ne!(seen(&on_b), b2, "the clock moved by hand wakes a topic's fetchers");
    }

    #[test]
    fn one_new_job_wakes_one_sleeping_fetcher_and_more_jobs_wake_more() {
        let wakers = Wakers::new(Arc::new(ManualClock::new()) as Arc<dyn Clock>);
        let notifier = wakers.for_fetch(&["a".to_owned()]);
        let woken = AtomicUsize::new(0);
        // Spins (no sleep) until `done` holds.
        let until = |done: &dyn Fn() -> bool| {
            while !done() {
                std::thread::yield_now();
            }
        };
        std::thread::scope(|scope| {
            for _ in 0..3 {
                let (seen, notifier, woken) = (notifier.seen(), &notifier, &woken);
                scope.spawn(move || {
                    notifier.wait(seen, true, None);
                    woken.fetch_add(1, Ordering::SeqCst);
                });
            }
            until(&|| notifier.sleepers() == 3);
            wakers.topic("a", 1);
            until(&|| woken.load(Ordering::SeqCst) >= 1);
            // parking_lot's condvar has no spurious wakeups: with one woken,
            // both counts are exact (a woken thread leaves `sleepers` before
            // it counts itself woken).
            assert_eq!(woken.load(Ordering::SeqCst), 1, "one job, one fetcher woken");
            assert_eq!(notifier.sleepers(), 2, "the others sleep on");
            wakers.topic("a", 5);
            until(&|| woken.load(Ordering::SeqCst) >= 3);
        });
        assert_eq!(notifier.sleepers(), 0);
    }
}
