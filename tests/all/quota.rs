//! Tenant quotas in the worker pools: a tenant's running jobs never exceed
//! its `max_concurrent` across its topics, and reach it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use husk::quota::Quota;
use husk::sandbox::CancelToken;
use husk::sandbox::Ending;
use husk::store::{LockedJob, MemoryStore};
use husk::worker::{Handled, Handler};
use husk::{Enqueue, Host, Topic};

use crate::support_sink::WaitingSink;

const LIMIT: usize = 3;

/// Counts the jobs running at once (across every topic sharing it) and
/// keeps the highest count. Until the test opens it, every job waits: the
/// workers that claimed jobs hold their tenant's permits, so the gate fills
/// up whatever the threads' timing; once open, jobs run freely.
struct Overlap {
    running: AtomicUsize,
    peak: AtomicUsize,
    open: AtomicBool,
}

impl Handler for Overlap {
    fn handle(&self, _job: &LockedJob, _cancel: &CancelToken) -> Handled {
        let now = self.running.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(now, Ordering::AcqRel);
        while !self.open.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        self.running.fetch_sub(1, Ordering::AcqRel);
        Handled::new(Ending::Returned(b"1".to_vec()))
    }
}

/// Polls `condition` every millisecond for up to 60 s.
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < Duration::from_secs(60), "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_tenants_running_jobs_never_exceed_max_concurrent_across_its_topics() {
    never_exceeds_max_concurrent(MemoryStore::new());
}

/// The same, each batch's permits coming back only when the dispatcher's
/// completer has committed its reports (as on PostgreSQL).
#[test]
fn max_concurrent_holds_with_reports_completed_in_the_background() {
    never_exceeds_max_concurrent(MemoryStore::new().completing_in_background());
}

fn never_exceeds_max_concurrent(store: MemoryStore) {
    let overlap =
        Arc::new(Overlap { running: AtomicUsize::new(0), peak: AtomicUsize::new(0), open: AtomicBool::new(false) });
    let sink = Arc::new(WaitingSink::default());
    let host = Host::builder()
        .store(Arc::new(store))
        .sink(sink.clone())
        .quota("acme", Quota::default().with_max_concurrent(Some(LIMIT)).with_max_queued(None))
        .topic(Topic::native("one", overlap.clone()).with_tenant("acme").with_workers(4).with_fetch_batch(2))
        .topic(Topic::native("two", overlap.clone()).with_tenant("acme").with_workers(4))
        .build()
        .unwrap();
    for topic in ["one", "two"] {
        host.submit(Enqueue::many(topic, vec![b"{}".to_vec(); 100])).unwrap();
    }
    // Eight workers with work for all of them: the gate fills, and stays
    // full while the jobs wait. A permit is taken before its job reaches
    // the handler (and a worker of `one` holds two, running its batch's
    // jobs one by one), so wait for the gate and for a job in the handler;
    // then give the other workers time to try for more.
    wait_until("the gate to fill and a job to run", || {
        host.concurrency("acme") == Some((LIMIT, LIMIT)) && overlap.running.load(Ordering::Acquire) > 0
    });
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(host.concurrency("acme"), Some((LIMIT, LIMIT)), "the gate stays full");
    let peak = overlap.peak.load(Ordering::Acquire);
    assert!((1..=LIMIT).contains(&peak), "{peak} jobs ran at once with the gate full, limit {LIMIT}");
    overlap.open.store(true, Ordering::Release);
    sink.wait_len(200, Duration::from_secs(120));
    let peak = overlap.peak.load(Ordering::Acquire);
    assert!(peak <= LIMIT, "peak concurrency {peak} above the limit {LIMIT}");
    // Permits go back right after each batch's report, just after its
    // outcomes reached the sink.
    wait_until("every permit back", || host.concurrency("acme") == Some((0, LIMIT)));
}
