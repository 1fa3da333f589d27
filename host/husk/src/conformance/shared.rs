//! Conformance checks of [`Shared`](crate::store::Shared): a capped
//! enqueue counts the tenant's live jobs in the same step as its insert.

use std::time::Duration;

use crate::outcome::Outcome;
use crate::store::{AttemptRun, Capped, FetchRequest, NewJob, QueueCap, Report, Reported};

use super::Backend;
use super::queue::{job, now};

/// Conformance check: a capped enqueue counts the tenant's live jobs —
/// queued, gated and running, of its topics only — and enqueues a batch
/// whole or not at all: nothing past the limit; a job ending makes room.
pub fn a_capped_enqueue_counts_live_jobs_of_the_tenants_topics(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let topics = ["a".to_owned(), "b".to_owned()];
    let cap = QueueCap { tenant: "t", topics: &topics, max: 3 };
    let enqueue = |jobs: Vec<NewJob>| store.shared().unwrap().enqueue_capped(jobs, &cap, now()).unwrap();
    let created = |capped: Capped| match capped {
        Capped::Enqueued(enqueued) => enqueued.iter().filter(|e| e.created).count(),
        Capped::Full { live } => panic!("refused at {live} live of 3"),
    };
    let gated = NewJob { not_before: Some(now() + Duration::from_secs(5)), ..job("b") };
    assert_eq!(created(enqueue(vec![job("a")])), 1);
    // Two more would make 4: the batch is refused whole.
    assert_eq!(enqueue(vec![job("a"), job("b"), job("b")]), Capped::Full { live: 1 });
    assert_eq!(created(enqueue(vec![gated])), 1);
    // Another tenant's topic does not count.
    store.enqueue(vec![job("other"), job("other")], now()).unwrap();
    let request = FetchRequest { worker: "w", topics: &topics[..1], max: 1, lock_duration: Duration::from_secs(30) };
    let running = store.fetch_and_lock(request, now()).unwrap().jobs.remove(0);
    let third = match enqueue(vec![job("a")]) {
        Capped::Enqueued(enqueued) => enqueued[0].id,
        Capped::Full { live } => panic!("refused at {live} live of 3"),
    };
    // Running, gated and queued: 3.
    assert_eq!(enqueue(vec![job("b")]), Capped::Full { live: 3 });
    assert_eq!(store.depths().unwrap().iter().map(|(_, d)| d.live()).sum::<u64>(), 5, "nothing enqueued at the limit");
    let report = Report::End { outcome: Outcome::Completed { output: b"1".to_vec() }, run: AttemptRun::default() };
    assert!(matches!(store.report(vec![(running.lock, report)], now()).unwrap()[0], Reported::Ended(_)));
    assert_eq!(created(enqueue(vec![job("b")])), 1);
    assert_eq!(enqueue(vec![job("a")]), Capped::Full { live: 3 });
    assert!(store.get(third).unwrap().is_some());
}
