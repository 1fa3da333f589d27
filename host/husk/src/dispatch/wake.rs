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
//! A fetcher whose fetch found its topic paused waits for such a change (a
//! resume is one), not for its topic's new jobs: it could claim none.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::RwLock;

use crate::clock::Clock;
use crate::notify::{Notifier, Seen};
use crate::store::Fetched;

/// What a fetcher's previous fetch found, kept by the fetcher between its
/// calls to [`Dispatcher::fetch_and_lock`](super::Dispatcher::fetch_and_lock).
///
/// A fetch that returned fewer jobs than it asked for took every job that
/// was fetchable when it began: the next fetch would find only what came
/// since. Under a stream of single enqueues that was one empty fetch per job
/// (a claim and the wake-time queries, for nothing). So the next call first
/// waits as if that fetch had found nothing: it fetches at once if a job's
/// wake (or a change for all) came since, else when one comes or the
/// fetch's next gate or lock expiry is due.
///
/// `Default` knows nothing: the first fetch runs at once.
#[derive(Debug, Default)]
pub struct LastFetch {
    drained: Option<Drained>,
}

/// A fetch that took all there was: on which notifier, what it had seen
/// before it began, its next wake time, and whether it found its topics
/// paused.
#[derive(Debug)]
struct Drained {
    notifier: Arc<Notifier>,
    seen: Seen,
    next_wake: Option<SystemTime>,
    paused: bool,
}

impl LastFetch {
    /// Records a fetch on `notifier`, begun after `seen`, that took every
    /// fetchable job (`drained`), or not.
    pub(super) fn record(&mut self, drained: bool, notifier: &Arc<Notifier>, seen: Seen, fetched: &Fetched) {
        self.drained = drained.then(|| Drained {
            notifier: notifier.clone(),
            seen,
            next_wake: fetched.next_wake,
            paused: fetched.paused,
        });
    }

    /// Takes what the last fetch on `notifier` saw, if it drained the
    /// topics: (what it had seen, its next wake time, whether they were
    /// paused).
    pub(super) fn take_drained(&mut self, notifier: &Arc<Notifier>) -> Option<(Seen, Option<SystemTime>, bool)> {
        let drained = self.drained.take()?;
        Arc::ptr_eq(&drained.notifier, notifier).then_some((drained.seen, drained.next_wake, drained.paused))
    }
}

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

    /// Wakes every fetcher of `topic`, including those waiting out its
    /// pause (a change for all: see [`Notifier::wait_for_all`]), and every
    /// fetcher of several topics.
    pub(super) fn resumed(&self, topic: &str) {
        if let Some(notifier) = self.topics.read().get(topic) {
            notifier.notify();
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
        let seen = |n: &crate::notify::Notifier| n.seen();
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

    /// A fetch that took fewer jobs than it asked for took all there was:
    /// the fetcher's next call waits for a wake before it asks the store
    /// again, rather than run a fetch that finds nothing. A full fetch, or
    /// a call whose wait is over, asks at once.
    #[test]
    fn after_a_fetch_that_took_all_there_was_the_next_fetch_waits_for_a_wake() {
        use std::time::Duration;

        use crate::dispatch::{Dispatcher, LastFetch, TopicPolicy};
        use crate::outcome::CollectingSink;
        use crate::store::{FetchRequest, JobState, JobStore, MemoryStore, NewJob};

        let clock = ManualClock::new();
        let store = Arc::new(MemoryStore::new());
        let sink = Arc::new(CollectingSink::default());
        let dispatcher = Dispatcher::new(store.clone(), Arc::new(clock.clone()), sink, None);
        dispatcher.set_topic("t", TopicPolicy::default());
        let topics = ["t".to_owned()];
        let request = FetchRequest { worker: "w", topics: &topics, max: 4, lock_duration: Duration::from_secs(60) };
        let stop = Default::default();
        // A job stored without a wake: as another process's enqueue whose
        // notification has not come yet.
        let unannounced = || {
            let job = NewJob {
                topic: "t".into(),
                input: b"{}".to_vec(),
                policy: Default::default(),
                not_before: None,
                key: None,
                keep_input: true,
                priority: 0,
            };
            store.enqueue(vec![job], clock.now()).unwrap()[0].id
        };
        let fetch = |last: &mut LastFetch, wait: Duration| {
            dispatcher.fetch_and_lock(request, wait, &stop, None, last).unwrap().len()
        };

        let mut last = LastFetch::default();
        dispatcher.enqueue("t", b"{}".to_vec()).unwrap();
        assert_eq!(fetch(&mut last, Duration::ZERO), 1, "one of four asked for: the topic is drained");
        let quiet = unannounced();
        let wakers = &dispatcher.wakers;
        let fetched = std::thread::scope(|scope| {
            let fetcher = scope.spawn(|| fetch(&mut last, Duration::from_secs(3600)));
            while wakers.sleeping("t") == 0 && !fetcher.is_finished() {
                std::thread::yield_now();
            }
            assert!(!fetcher.is_finished(), "the call after a drained fetch waits before it fetches");
            assert_eq!(store.get(quiet).unwrap().unwrap().state, JobState::Queued, "and it has not fetched");
            dispatcher.enqueue("t", b"{}".to_vec()).unwrap();
            fetcher.join().unwrap()
        });
        assert_eq!(fetched, 2, "a wake: it fetches, the quiet job too");

        // Drained again; the call's wait is over: it fetches anyway.
        unannounced();
        assert_eq!(fetch(&mut last, Duration::ZERO), 1);

        // A full fetch may have left jobs: the next call fetches at once.
        for _ in 0..4 {
            dispatcher.enqueue("t", b"{}".to_vec()).unwrap();
        }
        assert_eq!(fetch(&mut last, Duration::ZERO), 4);
        unannounced();
        let fetched = std::thread::scope(|scope| {
            let fetcher = scope.spawn(|| fetch(&mut last, Duration::from_secs(3600)));
            while wakers.sleeping("t") == 0 && !fetcher.is_finished() {
                std::thread::yield_now();
            }
            // Unstick a wrongly waiting fetcher, so a failure fails, not hangs.
            let waited = !fetcher.is_finished();
            wakers.all();
            (waited, fetcher.join().unwrap())
        });
        assert_eq!(fetched, (false, 1), "after a full fetch, the next fetches at once");
    }
}
