//! Conformance checks of [`Pauses`](crate::store::Pauses): a paused topic
//! takes enqueues and is not fetched, and its waiting fetchers sleep
//! through enqueues until the resume.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use crate::store::{AttemptRun, FetchRequest, JobId, JobState, LockedJob, NewJob, Report, Reported};

use super::dispatch::fixed;
use super::queue::{fetch_all, ids_of, job, now};
use super::wakes::{CountingFetches, next_look};
use super::{Backend, LOCK};
use crate::clock::ManualClock;
use crate::dispatch::{Dispatcher, TopicPolicy};
use crate::outcome::CollectingSink;

/// Conformance check: a paused topic is not fetched — neither its queued
/// jobs nor its gated ones once their gate passes — while enqueues still
/// land, a running job still reports, and other topics run; a fetch of the
/// paused topic alone says it is paused; a resume makes them fetchable
/// again.
pub fn a_paused_topic_takes_enqueues_but_is_not_fetched_until_resumed(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let running = store.enqueue(vec![job("p")], now()).unwrap()[0].id;
    let held = fetch_all(store, "p");
    assert_eq!(held.len(), 1);

    assert!(store.pauses().unwrap().set_paused("p", true).unwrap());
    assert!(!store.pauses().unwrap().set_paused("p", true).unwrap(), "already paused");
    assert_eq!(store.pauses().unwrap().paused().unwrap(), vec!["p".to_owned()]);
    let gated = NewJob { not_before: Some(now() + Duration::from_secs(1)), ..job("p") };
    let queued = ids_of(store.enqueue(vec![job("p"), gated, job("q")], now()).unwrap());
    let topics = ["p".to_owned(), "q".to_owned()];
    let later = now() + Duration::from_secs(2);
    let request = FetchRequest { worker: "w", topics: &topics, max: 10, lock_duration: Duration::from_secs(30) };
    let fetched = store.fetch_and_lock(request, later).unwrap();
    assert!(!fetched.paused, "one of the topics asked for runs");
    assert_eq!(
        fetched.jobs.iter().map(LockedJob::id).collect::<Vec<_>>(),
        vec![queued[2]],
        "only the other topic's job"
    );
    let alone = ["p".to_owned()];
    let fetched = store.fetch_and_lock(FetchRequest { topics: &alone, ..request }, later).unwrap();
    assert!(fetched.jobs.is_empty() && fetched.paused, "the paused topic alone: nothing, and said so");
    let report = vec![(held[0].lock, Report::Completed { output: b"1".to_vec(), run: AttemptRun::default() })];
    assert!(matches!(store.report(report, later).unwrap()[0], Reported::Ended(_)), "a running job still ends");
    assert_eq!(store.get(running).unwrap().unwrap().state, JobState::Terminal);
    let depths: std::collections::HashMap<_, _> = store.depths().unwrap().into_iter().collect();
    assert_eq!(depths["p"].live(), 2, "the paused topic's jobs are kept");

    assert!(store.pauses().unwrap().set_paused("p", false).unwrap());
    assert!(!store.pauses().unwrap().set_paused("p", false).unwrap(), "already running");
    assert!(store.pauses().unwrap().paused().unwrap().is_empty());
    let empty = store.fetch_and_lock(FetchRequest { topics: &["r".to_owned()], ..request }, later).unwrap();
    assert!(empty.jobs.is_empty() && !empty.paused, "a running topic without jobs is not paused");
    let mut resumed = store.fetch_and_lock(request, later).unwrap().jobs.iter().map(LockedJob::id).collect::<Vec<_>>();
    resumed.sort();
    assert_eq!(resumed, queued[..2]);
}

/// Conformance check: a fetch that finds its topic paused sleeps through
/// the topic's enqueues (each would otherwise cost a fetch that claims
/// nothing) and fetches again on the resume, taking what came meanwhile.
pub fn a_fetch_of_a_paused_topic_sleeps_through_enqueues_until_the_resume(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = Arc::new(CountingFetches { store: fresh.store.clone(), fetches: AtomicUsize::new(0) });
    let clock = ManualClock::new();
    let dispatcher = Dispatcher::new(store.clone(), Arc::new(clock), Arc::new(CollectingSink::new()), None);
    dispatcher.set_topic("t", TopicPolicy { retry: Some(fixed(3, 10)), mapper: None, ..Default::default() });
    assert!(dispatcher.set_paused("t", true).unwrap());
    let fetches = || store.fetches.load(Ordering::SeqCst);
    let (tx, rx) = mpsc::channel();
    let stop = AtomicBool::new(false);
    let (early, while_paused, enqueued, woken) = std::thread::scope(|scope| {
        scope.spawn(|| {
            let topics = ["t".to_owned()];
            let request = FetchRequest { worker: "w", topics: &topics, max: 10, lock_duration: LOCK };
            let jobs =
                dispatcher.fetch_and_lock(request, Duration::from_secs(3600), &stop, None, &mut Default::default());
            tx.send(jobs.unwrap()).unwrap();
        });
        assert!(next_look(&store, &dispatcher, 0, &rx).is_none(), "fetched from a paused topic");
        let enqueued: Vec<JobId> = (0..3).map(|_| dispatcher.enqueue("t", b"{}".to_vec()).unwrap()).collect();
        // Each enqueue's wake would have woken a fetcher of a running topic
        // at once (`a_waiting_fetch_wakes_on_enqueue`), each a fetch. A
        // change for all that is no resume comes after them: the fetcher
        // looks once for it, finds its topic still paused, and sleeps again.
        dispatcher.wake_fetchers();
        let early = next_look(&store, &dispatcher, 1, &rx);
        let while_paused = fetches();
        assert!(dispatcher.set_paused("t", false).unwrap());
        let woken = early.is_none().then(|| rx.recv_timeout(Duration::from_secs(30)).ok()).flatten();
        // A fetcher still asleep (a failure) is stopped, not waited for.
        stop.store(true, Ordering::SeqCst);
        dispatcher.wake_fetchers();
        (early, while_paused, enqueued, woken)
    });
    assert!(early.is_none(), "still asleep after the enqueues");
    assert_eq!(while_paused, 2, "no fetch for the enqueues while the topic is paused, one for the wake");
    let mut fetched: Vec<JobId> = woken.expect("woken by the resume").iter().map(|j| j.id()).collect();
    fetched.sort();
    assert_eq!(fetched, enqueued, "one fetch takes every job enqueued meanwhile");
    assert_eq!(fetches(), 3);
}
