//! The whole pipeline through worker pools and the sandbox: real plugins,
//! real threads, the system clock. These tests wait for outcomes; they do
//! not measure time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use husk::outcome::Outcome;
use husk::retry::RetryPolicySpec;
use husk::sandbox::Limits;
use husk::store::{CancelResult, JobId, JobState, MemoryStore};
use husk::{Host, MapperSpec, PluginSource, Topic};
use serde_json::json;

use crate::support::{MAPPER_DEADLINE, guest, test_config};
use crate::support_sink::WaitingSink;

const PATIENCE: Duration = Duration::from_secs(60);

fn source(name: &str) -> PluginSource {
    PluginSource::Path(guest(name))
}

fn quick_retry() -> RetryPolicySpec {
    RetryPolicySpec::Fixed { max_attempts: 3, delay: Duration::from_millis(5) }
}

fn wait_until_running(host: &Host, id: JobId) {
    let deadline = Instant::now() + PATIENCE;
    while host.job(id).unwrap().unwrap().state != JobState::Running {
        assert!(Instant::now() < deadline, "job {id} never started");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn jobs_flow_through_pools_sandbox_mapper_and_retries() {
    jobs_flow_through(MemoryStore::new());
}

/// The same, each batch's reports committed by the dispatcher's completer
/// while its worker runs the next batch (as on PostgreSQL).
#[test]
fn jobs_flow_through_pools_with_reports_completed_in_the_background() {
    jobs_flow_through(MemoryStore::new().completing_in_background());
}

fn jobs_flow_through(store: MemoryStore) {
    let sink = Arc::new(WaitingSink::default());
    let host = Host::builder()
        .store(Arc::new(store))
        .engine(test_config())
        .sink(sink.clone())
        .default_retry(quick_retry())
        .topic(Topic::wasm("transform", source("transform")).with_workers(2).with_fetch_batch(4))
        .topic(Topic::wasm("flaky", source("flaky")).with_workers(1))
        .topic(
            Topic::wasm("payments", source("business"))
                .with_workers(1)
                .with_mapper(MapperSpec::Plugin(source("mapper")))
                .with_mapper_deadline(MAPPER_DEADLINE),
        )
        .topic(
            Topic::wasm("own-mapper", source("business"))
                .with_workers(1)
                .with_mapper(MapperSpec::SamePlugin)
                .with_mapper_deadline(MAPPER_DEADLINE),
        )
        .build()
        .unwrap();
    let mut expected = HashMap::new();
    for i in 0..20 {
        let id = host.enqueue("transform", json!({ "name": format!("n{i}") }).to_string()).unwrap();
        expected.insert(id, "completed");
    }
    for (succeed_on, kind) in [(1, "completed"), (3, "completed"), (4, "failed")] {
        let id = host.enqueue("flaky", json!({ "succeed_on_attempt": succeed_on }).to_string()).unwrap();
        expected.insert(id, kind);
    }
    for (topic, input, kind) in [
        ("payments", json!({ "account": "a", "amount": 500, "balance": 1 }), "business-error"),
        ("payments", json!({ "account": "frozen", "amount": 1, "balance": 1 }), "business-status"),
        ("own-mapper", json!({ "account": "a", "amount": 500, "balance": 1 }), "business-error"),
    ] {
        expected.insert(host.enqueue(topic, input.to_string()).unwrap(), kind);
    }
    let outcomes = sink.wait_for(expected.len(), PATIENCE);
    assert_eq!(outcomes.len(), expected.len());
    for outcome in &outcomes {
        assert_eq!(outcome.outcome.kind(), expected[&outcome.job_id], "{outcome:?}");
    }
    let flaky_failed = outcomes.iter().find(|o| o.outcome.kind() == "failed").unwrap();
    match &flaky_failed.outcome {
        Outcome::Failed { topic, attempts, last_fault, plugin_version, .. } => {
            assert_eq!((topic.as_str(), *attempts, last_fault.code.as_str()), ("flaky", 3, "flaky.unavailable"));
            assert_eq!(plugin_version.as_ref().map(String::len), Some(64), "the digest of the version that ran");
        }
        other => panic!("{other:?}"),
    }
    let declined = outcomes.iter().find(|o| o.topic == "payments" && o.outcome.kind() == "business-error").unwrap();
    assert_eq!(
        declined.outcome,
        Outcome::BusinessError { code: "insufficient-funds".into(), message: "the payment was declined".into() }
    );
    let totals = host.totals();
    assert_eq!(totals.retries, 2 + 2, "flaky: 2 retries to succeed on attempt 3, 2 before failing");
    host.shutdown();
    assert_eq!(sink.all().len(), expected.len(), "no outcome delivered twice");
}

fn runaway_host(sink: Arc<WaitingSink>) -> Host {
    Host::builder()
        .engine(test_config())
        .sink(sink)
        .topic(
            Topic::wasm("runaway", source("spin"))
                .with_workers(1)
                .with_limits(Limits::default().with_deadline(Duration::from_secs(3600))),
        )
        .topic(Topic::wasm("transform", source("transform")).with_workers(1))
        .build()
        .unwrap()
}

#[test]
fn cancelling_a_running_runaway_ends_it_cancelled_exactly_once() {
    let sink = Arc::new(WaitingSink::default());
    let host = runaway_host(sink.clone());
    let id = host.enqueue("runaway", "{}").unwrap();
    wait_until_running(&host, id);
    assert_eq!(host.cancel(id).unwrap(), CancelResult::Cancelling);
    let outcomes = sink.wait_for(1, PATIENCE);
    assert_eq!(outcomes[0].job_id, id);
    assert_eq!(outcomes[0].outcome, Outcome::Cancelled);
    assert_eq!(host.cancel(id).unwrap(), CancelResult::AlreadyEnded);
    // The worker is free again: the next runaway starts on it.
    let next = host.enqueue("runaway", "{}").unwrap();
    wait_until_running(&host, next);
    host.cancel(next).unwrap();
    sink.wait_for(2, PATIENCE);
    host.shutdown();
    assert_eq!(sink.all().iter().filter(|o| o.job_id == id).count(), 1);
    assert_eq!(host.totals().retries, 0, "a cancelled job is never retried");
}

#[test]
fn status_reads_and_enqueues_answer_while_a_guest_spins() {
    let sink = Arc::new(WaitingSink::default());
    let host = runaway_host(sink.clone());
    let spinning = host.enqueue("runaway", "{}").unwrap();
    wait_until_running(&host, spinning);
    // The guest holds its worker for up to an hour; these must not wait.
    let snapshot = host.publish_snapshot().unwrap();
    assert_eq!(snapshot.depths["runaway"].running, 1);
    let _ = host.snapshot();
    let queued = host.enqueue("transform", json!({ "name": "meanwhile" }).to_string()).unwrap();
    let done = sink.wait_for(1, PATIENCE);
    assert_eq!(done[0].job_id, queued, "another topic's job ran while the guest spun");
    let record = host.job(spinning).unwrap().unwrap();
    assert_eq!(record.state, JobState::Running, "all of this happened while the guest was still spinning");
    host.cancel(spinning).unwrap();
    sink.wait_for(2, PATIENCE);
}
