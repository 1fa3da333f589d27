//! Conformance checks of the `JobStore` contract itself: the outcome log
//! and its cursor, depths and listing, releases, idempotency keys.

use std::time::{Duration, SystemTime};

use crate::fault::Fault;
use crate::outcome::Outcome;
use crate::retry::RetryPolicySpec;
use crate::store::{
    AttemptRun, CancelResult, Depth, Enqueued, FetchRequest, JobId, JobState, JobStore, LockedJob, NewJob, Report,
    Reported,
};

use super::Backend;

pub(super) const T0: Duration = Duration::from_secs(1_000_000);

pub(super) fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + T0
}

pub(super) fn job(topic: &str) -> NewJob {
    NewJob {
        topic: topic.into(),
        input: b"{}".to_vec(),
        policy: RetryPolicySpec::None,
        not_before: None,
        key: None,
        keep_input: true,
        priority: 0,
    }
}

pub(super) fn ids_of(enqueued: Vec<Enqueued>) -> Vec<JobId> {
    enqueued.into_iter().map(|e| e.id).collect()
}

pub(super) fn run_to_end(store: &dyn JobStore, topic: &str, outcome: Outcome) -> JobId {
    let id = store.enqueue(vec![job(topic)], now()).unwrap()[0].id;
    end_one(store, topic, outcome, now());
    id
}

/// Fetches the one fetchable job of `topic` and reports `report` for it at `at`.
pub(super) fn report_one(store: &dyn JobStore, topic: &str, report: Report, at: SystemTime) -> Reported {
    let topics = [topic.to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let fetched = store.fetch_and_lock(request, at).unwrap();
    assert_eq!(fetched.jobs.len(), 1, "one job of {topic} to fetch");
    store.report(vec![(fetched.jobs[0].lock, report)], at).unwrap().remove(0)
}

/// Fetches the one fetchable job of `topic` and ends it with `outcome` at `at`.
pub(super) fn end_one(store: &dyn JobStore, topic: &str, outcome: Outcome, at: SystemTime) {
    let reported = report_one(store, topic, Report::End { outcome, run: AttemptRun::default() }, at);
    assert!(matches!(reported, Reported::Ended(_)), "{reported:?}");
}

pub(super) fn failed(topic: &str, code: &str) -> Outcome {
    Outcome::Failed {
        topic: topic.into(),
        attempts: 1,
        last_fault: Fault::new(code, "{}"),
        diagnostic: "d".into(),
        plugin_version: None,
    }
}

/// Conformance check: outcome log is ordered and resumable by cursor, its
/// head the last outcome's.
pub fn outcome_log_is_ordered_and_resumable_by_cursor(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    assert_eq!(store.outcome_head().unwrap(), 0, "no outcome yet");
    let ids: Vec<JobId> =
        (0..5).map(|_| run_to_end(store, "t", Outcome::BusinessStatus { value: "s".into() })).collect();
    let all = store.outcomes_after(0, 100).unwrap();
    assert_eq!(store.outcome_head().unwrap(), all[4].seq, "the head is the last outcome");
    assert_eq!(all.iter().map(|o| o.job_id).collect::<Vec<_>>(), ids);
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    let rest = store.outcomes_after(all[1].seq, 2).unwrap();
    assert_eq!(rest.iter().map(|o| o.job_id).collect::<Vec<_>>(), ids[2..4]);
    assert!(store.outcomes_after(all[4].seq, 10).unwrap().is_empty());
}

/// Conformance check: release requeues on the same attempt unless a cancel was asked.
pub fn release_requeues_on_the_same_attempt_unless_a_cancel_was_asked(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let ids = ids_of(store.enqueue(vec![job("t"), job("t")], now()).unwrap());
    let topics = ["t".to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 2, lock_duration: Duration::from_secs(30) };
    let fetched = store.fetch_and_lock(request, now()).unwrap().jobs;
    assert_eq!(fetched.len(), 2);
    assert_eq!(store.cancel(ids[1], now()).unwrap(), CancelResult::Cancelling);
    let reports = fetched.iter().map(|j| (j.lock, Report::Release)).collect();
    let results = store.report(reports, now()).unwrap();
    assert_eq!(results[0], Reported::Released);
    assert!(matches!(&results[1], Reported::Ended(o) if o.outcome == Outcome::Cancelled && o.attempts == 1));
    let released = store.get(ids[0]).unwrap().unwrap();
    assert_eq!((released.state, released.attempt, released.lock), (JobState::Queued, 1, None));
    let again = store.fetch_and_lock(request, now()).unwrap().jobs;
    assert_eq!(again.iter().map(|j| (j.id(), j.attempt)).collect::<Vec<_>>(), vec![(ids[0], 1)]);
    let stale = store.report(vec![(fetched[0].lock, Report::Release)], now()).unwrap();
    assert_eq!(stale, vec![Reported::LockLost], "an old lock cannot release the job again");
}

pub(super) fn keyed(topic: &str, key: &str) -> NewJob {
    NewJob { key: Some(key.into()), ..job(topic) }
}

pub(super) fn fetch_all(store: &dyn JobStore, topic: &str) -> Vec<LockedJob> {
    let topics = [topic.to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 100, lock_duration: Duration::from_secs(30) };
    store.fetch_and_lock(request, now()).unwrap().jobs
}

/// Conformance check: an idempotency key enqueues one job even after it ended.
pub fn an_idempotency_key_enqueues_one_job_even_after_it_ended(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let first = store.enqueue(vec![keyed("t", "order-1")], now()).unwrap();
    assert!(first[0].created);
    let id = first[0].id;
    let again = Enqueued { id, created: false };
    assert_eq!(store.enqueue(vec![keyed("t", "order-1")], now()).unwrap(), vec![again]);
    assert_eq!(live(store), 1, "one job");

    let fetched = fetch_all(store, "t");
    assert_eq!(fetched.iter().map(|j| j.id()).collect::<Vec<_>>(), vec![id]);
    let done = Report::Completed { output: b"1".to_vec(), run: AttemptRun::default() };
    assert!(matches!(store.report(vec![(fetched[0].lock, done)], now()).unwrap()[0], Reported::Ended(_)));
    assert_eq!(store.enqueue(vec![keyed("t", "order-1")], now()).unwrap(), vec![again], "the key outlives the job");
    let ended: Vec<JobId> = store.outcomes_after(0, 10).unwrap().iter().map(|o| o.job_id).collect();
    assert_eq!(ended, vec![id], "one job, ended once");
    assert!(fetch_all(store, "t").is_empty(), "nothing enqueued");
    assert!(store.depths().unwrap().iter().all(|(_, d)| *d == Depth::default()));
}

/// Conformance check: distinct keys enqueue distinct jobs and a repeat in one call enqueues once.
pub fn distinct_keys_enqueue_distinct_jobs_and_a_repeat_in_one_call_enqueues_once(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let old = store.enqueue(vec![keyed("t", "a")], now()).unwrap()[0].id;
    let batch = vec![keyed("t", "b"), keyed("t", "c"), keyed("t", "b"), job("t"), keyed("t", "a"), job("t")];
    let result = store.enqueue(batch, now()).unwrap();
    assert_eq!(result.iter().map(|e| e.created).collect::<Vec<_>>(), [true, true, false, true, false, true]);
    let (b, c, unkeyed, other) = (result[0].id, result[1].id, result[3].id, result[5].id);
    assert_eq!(result[2].id, b, "the repeat names the first job with the key");
    assert_eq!(result[4].id, old, "a key already in the store");
    let mut new = vec![old, b, c, unkeyed, other];
    new.sort();
    new.dedup();
    assert_eq!(new.len(), 5, "distinct jobs: {result:?}");
    let mut fetched: Vec<JobId> = fetch_all(store, "t").iter().map(|j| j.id()).collect();
    fetched.sort();
    assert_eq!(fetched, new, "the five jobs, each once");
}

/// The store's live jobs, all topics together.
pub(super) fn live(store: &dyn JobStore) -> u64 {
    store.depths().unwrap().iter().map(|(_, d)| d.live()).sum()
}

/// Conformance check: outputs and fault bodies are kept byte for byte: JSON
/// with its whitespace and key order, bytes that are not UTF-8 or not JSON,
/// the four bytes `null`, nothing at all.
pub fn outputs_and_fault_bodies_are_kept_byte_exact(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let cases: [&[u8]; 6] = [
        b"{ \"b\": 1,\n  \"a\": [2.50] }",
        b"\xff\xfe\x00 not utf-8",
        b"null",
        b"",
        b"plain text",
        br#"{"base64":"aGk="}"#,
    ];
    let mut ids = Vec::new();
    for bytes in cases {
        ids.push(run_to_end(store, "t", Outcome::Completed { output: bytes.to_vec() }));
        let fault = Fault::new("f", bytes);
        let failed = Outcome::Failed {
            topic: "t".into(),
            attempts: 1,
            last_fault: fault,
            diagnostic: "d".into(),
            plugin_version: None,
        };
        ids.push(run_to_end(store, "t", failed));
    }
    let logged = store.outcomes_after(0, 100).unwrap();
    assert_eq!(logged.len(), ids.len());
    for (i, id) in ids.into_iter().enumerate() {
        let expected = cases[i / 2];
        let outcome = store.get(id).unwrap().unwrap().outcome.unwrap().outcome;
        for outcome in [outcome, logged[i].outcome.clone()] {
            match outcome {
                Outcome::Completed { output } => assert_eq!(output, expected, "output of job {id}"),
                Outcome::Failed { last_fault, .. } => assert_eq!(last_fault.body, expected, "fault body of job {id}"),
                other => panic!("job {id}: {other:?}"),
            }
        }
    }
}

/// Ends one job of `topic` with `outcome` at `at`, enqueued with `key`.
pub(super) fn end_at(store: &dyn JobStore, outcome: Outcome, key: Option<String>, at: SystemTime) -> JobId {
    let id = store.enqueue(vec![NewJob { key, ..job("t") }], at).unwrap()[0].id;
    let topics = ["t".to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let lock = store.fetch_and_lock(request, at).unwrap().jobs[0].lock;
    let reported = store.report(vec![(lock, Report::End { outcome, run: AttemptRun::default() })], at).unwrap();
    assert!(matches!(reported[0], Reported::Ended(_)));
    id
}

/// Conformance check: ready jobs are fetched by priority, then oldest first, and a retried job keeps its priority.
pub fn ready_jobs_are_fetched_by_priority_then_oldest_first(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let with = |priority| NewJob {
        priority,
        policy: RetryPolicySpec::Fixed { max_attempts: 3, delay: Duration::ZERO },
        ..job("t")
    };
    let ids = ids_of(store.enqueue([0, 5, -3, 5, 0, 100, -100].map(with).to_vec(), now()).unwrap());
    assert_eq!(store.get(ids[1]).unwrap().unwrap().priority, 5, "kept with the job");
    let topics = ["t".to_owned()];
    let fetch = |max| {
        let request = FetchRequest { worker: "w", topics: &topics, max, lock_duration: Duration::from_secs(30) };
        store.fetch_and_lock(request, now()).unwrap().jobs
    };
    let first = fetch(3);
    assert_eq!(first.iter().map(LockedJob::id).collect::<Vec<_>>(), [ids[5], ids[1], ids[3]]);
    // A job re-armed for a retry comes back at its own priority.
    let fault = Report::ReArm { fault: Fault::new("boom", ""), not_before: now(), run: AttemptRun::default() };
    assert_eq!(store.report(vec![(first[1].lock, fault)], now()).unwrap(), [Reported::ReArmed]);
    let rest: Vec<JobId> = std::iter::from_fn(|| fetch(1).first().map(LockedJob::id)).collect();
    assert_eq!(rest, [ids[1], ids[0], ids[4], ids[2], ids[6]]);
}
