//! Tenant quotas in the worker pools: a tenant's running jobs never exceed
//! its `max_concurrent` across its topics, and reach it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use husk::quota::Quota;
use husk::sandbox::CancelToken;
use husk::sandbox::Ending;
use husk::store::LockedJob;
use husk::worker::{Handled, Handler};
use husk::{Host, Topic};

use crate::support_sink::WaitingSink;

const LIMIT: usize = 3;

/// Counts the jobs running at once (across every topic sharing it) and
/// keeps the highest count. Each job holds its slot until `LIMIT` jobs run
/// together (or `hold` passes, so the last few jobs can end): without a
/// gate, the 8 workers would all be inside at once.
struct Overlap {
    running: AtomicUsize,
    peak: AtomicUsize,
    hold: Duration,
}

impl Handler for Overlap {
    fn handle(&self, _job: &LockedJob, _cancel: &CancelToken) -> Handled {
        let now = self.running.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(now, Ordering::AcqRel);
        let started = Instant::now();
        while self.running.load(Ordering::Acquire) < LIMIT + 1 && started.elapsed() < self.hold {
            std::thread::yield_now();
        }
        self.running.fetch_sub(1, Ordering::AcqRel);
        Handled::new(Ending::Returned(b"1".to_vec()))
    }
}

#[test]
fn a_tenants_running_jobs_never_exceed_max_concurrent_across_its_topics() {
    let overlap =
        Arc::new(Overlap { running: AtomicUsize::new(0), peak: AtomicUsize::new(0), hold: Duration::from_millis(20) });
    let sink = Arc::new(WaitingSink::default());
    let host = Host::builder()
        .sink(sink.clone())
        .quota("acme", Quota { max_concurrent: Some(LIMIT), max_queued: None })
        .topic(Topic::native("one", overlap.clone()).with_tenant("acme").with_workers(4).with_fetch_batch(2))
        .topic(Topic::native("two", overlap.clone()).with_tenant("acme").with_workers(4))
        .build()
        .unwrap();
    for topic in ["one", "two"] {
        host.dispatcher().enqueue_many(topic, vec![b"{}".to_vec(); 100], None).unwrap();
    }
    sink.wait_len(200, Duration::from_secs(120));
    let peak = overlap.peak.load(Ordering::Acquire);
    assert_eq!(peak, LIMIT, "peak concurrency {peak}, limit {LIMIT}");
    // Permits go back right after each batch's report, just after its
    // outcomes reached the sink.
    let started = Instant::now();
    while host.concurrency("acme") != Some((0, LIMIT)) {
        assert!(started.elapsed() < Duration::from_secs(10), "permits not given back: {:?}", host.concurrency("acme"));
        std::thread::yield_now();
    }
}
