//! Conformance checks of the dispatcher's waits on a store: a waiting
//! fetch wakes at the nearest gate and on an enqueue (its looks counted,
//! not slept through), and an enqueue is counted and wakes once it lands.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime};

use crate::clock::Clock;
use crate::dispatch::{Dispatcher, Enqueue, TopicPolicy};
use crate::outcome::TerminalOutcome;
use crate::store::{
    CancelResult, Depth, Enqueued, FetchRequest, Fetched, JobId, JobRecord, JobStore, Lock, NewJob, Report, Reported,
    StoreError, StoreEvents, Supports,
};

use super::{Backend, LOCK, Rig};

use super::dispatch::fixed;

/// The store under a check, counting the fetches made of it.
pub(super) struct CountingFetches {
    pub(super) store: Arc<dyn JobStore>,
    pub(super) fetches: AtomicUsize,
}

impl JobStore for CountingFetches {
    fn enqueue(&self, jobs: Vec<NewJob>, now: SystemTime) -> Result<Vec<Enqueued>, StoreError> {
        self.store.enqueue(jobs, now)
    }
    fn fetch_and_lock(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError> {
        self.fetches.fetch_add(1, Ordering::SeqCst);
        self.store.fetch_and_lock(request, now)
    }
    fn report(&self, reports: Vec<(Lock, Report)>, now: SystemTime) -> Result<Vec<Reported>, StoreError> {
        self.store.report(reports, now)
    }
    fn extend_lock(&self, lock: Lock, until: SystemTime, now: SystemTime) -> Result<bool, StoreError> {
        self.store.extend_lock(lock, until, now)
    }
    fn cancel(&self, id: JobId, now: SystemTime) -> Result<CancelResult, StoreError> {
        self.store.cancel(id, now)
    }
    fn get(&self, id: JobId) -> Result<Option<JobRecord>, StoreError> {
        self.store.get(id)
    }
    fn outcomes_after(&self, after: u64, limit: usize) -> Result<Vec<TerminalOutcome>, StoreError> {
        self.store.outcomes_after(after, limit)
    }
    fn outcome_head(&self) -> Result<u64, StoreError> {
        self.store.outcome_head()
    }
    fn depths(&self) -> Result<Vec<(String, Depth)>, StoreError> {
        self.store.depths()
    }
    /// The wrapped store's own, but not [`Shared`](crate::store::Shared):
    /// the dispatcher on this store is not subscribed to the store's
    /// notifications, so every look the checks count is one they caused. (On
    /// PostgreSQL, a notification of the store's own write could otherwise
    /// arrive late and wake a sleeping fetcher once more.)
    fn supports(&self) -> Supports<'_> {
        Supports { shared: None, ..self.store.supports() }
    }
}

/// A second dispatcher on a rig's store and clock whose fetches are
/// counted: a check sees each look of a waiting fetcher of topic `t`, so it
/// shows that a look found nothing without waiting to see nothing happen.
pub(super) struct Counted {
    store: Arc<CountingFetches>,
    dispatcher: Arc<Dispatcher>,
}

impl Counted {
    pub(super) fn new(rig: &Rig) -> Self {
        let store = Arc::new(CountingFetches { store: rig.dispatcher.store().clone(), fetches: AtomicUsize::new(0) });
        let dispatcher = Dispatcher::new(store.clone(), Arc::new(rig.clock.clone()), rig.sink.clone(), None);
        dispatcher.set_topic("t", TopicPolicy { retry: Some(fixed(3, 10)), mapper: None, ..Default::default() });
        Self { store, dispatcher }
    }

    /// Spins (no sleep) until the fetcher of `t`, after its first `looks`
    /// fetches, has fetched again and sleeps once more (`None`), or has
    /// returned (what it sent on `rx`).
    pub(super) fn next_look<T>(&self, looks: usize, rx: &mpsc::Receiver<T>) -> Option<T> {
        next_look(&self.store, &self.dispatcher, looks, rx)
    }
}

/// [`Counted::next_look`] for any counted store and its dispatcher.
pub(super) fn next_look<T>(
    store: &CountingFetches,
    dispatcher: &Dispatcher,
    looks: usize,
    rx: &mpsc::Receiver<T>,
) -> Option<T> {
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(sent) = rx.try_recv() {
            return Some(sent);
        }
        // The count is read before the sleepers: a sleeper seen after a new
        // fetch is the fetcher's next sleep, not the one before it.
        if store.fetches.load(Ordering::SeqCst) > looks && dispatcher.waiting_fetchers("t") == 1 {
            return rx.try_recv().ok();
        }
        assert!(Instant::now() < give_up, "the fetcher made no fetch after its first {looks} in 30 s");
        std::thread::yield_now();
    }
}

/// Conformance check: a waiting fetch wakes at the nearest gate.
pub fn a_waiting_fetch_wakes_at_the_nearest_gate(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 10));
    rig.dispatcher.set_topic("later", TopicPolicy { retry: Some(fixed(3, 20)), mapper: None, ..Default::default() });
    let near = rig.enqueue("t");
    rig.enqueue("later");
    let job = rig.fetch_one("t");
    rig.fail(&job, "flaky");
    let later = rig.fetch_one("later");
    rig.fail(&later, "flaky");
    let store_view = rig
        .dispatcher
        .store()
        .fetch_and_lock(
            crate::store::FetchRequest { worker: "peek", topics: &[], max: 0, lock_duration: LOCK },
            rig.clock.now(),
        )
        .unwrap();
    assert_eq!(store_view.next_wake, Some(rig.clock.now() + Duration::from_secs(10)), "the nearest gate");

    let counted = Counted::new(&rig);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let topics = ["t".to_owned()];
            let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: LOCK };
            let jobs = counted.dispatcher.fetch_and_lock(
                request,
                Duration::from_secs(3600),
                &rig.stop,
                None,
                &mut Default::default(),
            );
            tx.send(jobs.unwrap()).unwrap();
        });
        assert!(counted.next_look(0, &rx).is_none(), "found a job before any gate");
        // The clock's move wakes the fetcher: it looks, finds nothing due,
        // and sleeps again.
        rig.clock.advance(Duration::from_secs(9));
        assert!(counted.next_look(1, &rx).is_none(), "woke before the gate");
        rig.clock.advance(Duration::from_secs(1));
        let jobs = rx.recv_timeout(Duration::from_secs(30)).expect("woken at the gate");
        assert_eq!(jobs.iter().map(|j| j.id()).collect::<Vec<_>>(), vec![near]);
    });
}

/// Conformance check: a waiting fetch wakes on enqueue.
pub fn a_waiting_fetch_wakes_on_enqueue(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 10));
    let counted = Counted::new(&rig);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let topics = ["t".to_owned()];
            let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: LOCK };
            let jobs = counted.dispatcher.fetch_and_lock(
                request,
                Duration::from_secs(3600),
                &rig.stop,
                None,
                &mut Default::default(),
            );
            tx.send(jobs.unwrap()).unwrap();
        });
        assert!(counted.next_look(0, &rx).is_none(), "found a job in an empty queue");
        let id = counted.dispatcher.enqueue("t", b"{}".to_vec()).unwrap();
        let jobs = rx.recv_timeout(Duration::from_secs(30)).expect("woken by the enqueue");
        assert_eq!(jobs[0].id(), id);
    });
}

/// Conformance check: keyed enqueue counts and wakes only when it creates.
pub fn keyed_enqueue_counts_and_wakes_only_when_it_creates(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 1));
    let key = || Some("k".to_owned());
    let first = rig.dispatcher.submit(Enqueue::keyed("t", b"{}".to_vec(), key())).map(|mut e| e.remove(0)).unwrap();
    assert!(first.created);
    let again =
        rig.dispatcher.submit(Enqueue::keyed("t", b"{\"other\":1}".to_vec(), key())).map(|mut e| e.remove(0)).unwrap();
    assert_eq!(again, Enqueued { id: first.id, created: false });
    assert_eq!(rig.dispatcher.totals().enqueued, 1, "counted once");
    let unkeyed = rig.dispatcher.submit(Enqueue::keyed("t", b"{}".to_vec(), None)).map(|mut e| e.remove(0)).unwrap();
    assert!(unkeyed.created && unkeyed.id != first.id);
    assert!(rig.dispatcher.submit(Enqueue::keyed("nope", b"{}".to_vec(), key())).map(|mut e| e.remove(0)).is_err());
    let fetched: Vec<JobId> = rig.fetch("t", 10).iter().map(|j| j.id()).collect();
    assert_eq!(fetched, vec![first.id, unkeyed.id]);
    assert_eq!(rig.dispatcher.totals().enqueued, 2);
}

/// Conformance check: an async enqueue gives what the blocking one gives,
/// and one whose caller stops waiting once it started still lands, counted,
/// and wakes a waiting fetch.
pub fn an_async_enqueue_lands_counted_and_wakes_even_if_its_caller_stops_waiting(backend: &dyn Backend) {
    use std::future::Future;
    use std::task::{Context, Waker};

    let rig = Rig::with_topic(backend, fixed(3, 10));
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let key = || Some("k".to_owned());
    let both = vec![(b"{}".to_vec(), key()), (b"{\"other\":1}".to_vec(), key())];
    let enqueued = runtime.block_on(rig.dispatcher.submit_async(Enqueue::batch("t", both))).unwrap();
    assert!(enqueued[0].created);
    assert_eq!(enqueued[1], Enqueued { id: enqueued[0].id, created: false }, "a repeated key names the first job");
    let unknown = runtime.block_on(rig.dispatcher.submit_async(Enqueue::batch("nope", vec![(b"{}".to_vec(), None)])));
    assert!(unknown.is_err(), "an unknown topic is refused");
    assert_eq!(rig.dispatcher.totals().enqueued, 1);
    assert_eq!(rig.fetch("t", 10).len(), 1);

    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let topics = ["t".to_owned()];
            let request = FetchRequest { worker: "w", topics: &topics, max: 10, lock_duration: LOCK };
            let wait = Duration::from_secs(3600);
            tx.send(rig.dispatcher.fetch_and_lock(request, wait, &rig.stop, None, &mut Default::default()).unwrap())
                .unwrap();
        });
        {
            // Started (polled once, on the runtime: a blocking store's call
            // goes to its blocking pool), then dropped: the caller stopped
            // waiting.
            let _runtime = runtime.enter();
            let mut started =
                std::pin::pin!(rig.dispatcher.submit_async(Enqueue::batch("t", vec![(b"{}".to_vec(), None)])));
            let _ = started.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        }
        let jobs = rx.recv_timeout(Duration::from_secs(30)).expect("woken by the abandoned enqueue");
        assert_eq!(jobs.len(), 1, "the abandoned enqueue's job landed");
    });
    // Counted once its store call returns, which may be after the job is
    // visible to fetches (a shared store's notification can wake the
    // fetcher first).
    let give_up = Instant::now() + Duration::from_secs(30);
    while rig.dispatcher.totals().enqueued < 2 {
        assert!(Instant::now() < give_up, "the abandoned enqueue was not counted in 30 s");
        std::thread::yield_now();
    }
    assert_eq!(rig.dispatcher.totals().enqueued, 2, "counted once");
}
