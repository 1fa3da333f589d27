//! Conformance checks of the `JobStore` contract itself: the outcome log
//! and its cursor, depths and listing, releases, idempotency keys.

use std::time::{Duration, SystemTime};

use crate::fault::Fault;
use crate::outcome::{Outcome, OutcomeKind};
use crate::retry::RetryPolicySpec;
use crate::store::{
    AttemptRun, CancelResult, Capped, Depth, DiscardResult, Enqueued, FetchRequest, JobId, JobState, JobStore,
    ListFilter, LockedJob, NewJob, QueueCap, Report, Reported, Retention, RetryIncidentResult, StoredVersion,
    TopicVersion,
};
use crate::versions::{Origin, Stamp};

use super::Backend;

const T0: Duration = Duration::from_secs(1_000_000);

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + T0
}

fn job(topic: &str) -> NewJob {
    NewJob { topic: topic.into(), input: b"{}".to_vec(), policy: RetryPolicySpec::None, not_before: None, key: None }
}

fn ids_of(enqueued: Vec<Enqueued>) -> Vec<JobId> {
    enqueued.into_iter().map(|e| e.id).collect()
}

fn run_to_end(store: &dyn JobStore, topic: &str, outcome: Outcome) -> JobId {
    let id = store.enqueue(vec![job(topic)], now()).unwrap()[0].id;
    end_one(store, topic, outcome, now());
    id
}

/// Fetches the one fetchable job of `topic` and reports `report` for it at `at`.
fn report_one(store: &dyn JobStore, topic: &str, report: Report, at: SystemTime) -> Reported {
    let topics = [topic.to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let fetched = store.fetch_and_lock(request, at).unwrap();
    assert_eq!(fetched.jobs.len(), 1, "one job of {topic} to fetch");
    store.report(vec![(fetched.jobs[0].lock, report)], at).unwrap().remove(0)
}

/// Fetches the one fetchable job of `topic` and ends it with `outcome` at `at`.
fn end_one(store: &dyn JobStore, topic: &str, outcome: Outcome, at: SystemTime) {
    let reported = report_one(store, topic, Report::End { outcome, run: AttemptRun::default() }, at);
    assert!(matches!(reported, Reported::Ended(_)), "{reported:?}");
}

fn failed(topic: &str, code: &str) -> Outcome {
    Outcome::Failed {
        topic: topic.into(),
        attempts: 1,
        last_fault: Fault::new(code, "{}"),
        diagnostic: "d".into(),
        plugin_version: None,
    }
}

/// Conformance check: listing filters by outcome, enqueue time and fault
/// code, a job's latest outcome deciding.
pub fn listing_filters_by_outcome_enqueue_time_and_fault_code(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let at = |secs: u64| now() + Duration::from_secs(secs);
    let enqueue = |secs: u64| store.enqueue(vec![job("t")], at(secs)).unwrap()[0].id;
    let done = || Outcome::Completed { output: b"1".to_vec() };
    let completed = enqueue(0);
    end_one(store, "t", done(), at(0));
    let gated = enqueue(10);
    let fault = Fault::new("net.timeout", "{}");
    let re_arm = Report::ReArm { fault, not_before: at(1000), run: AttemptRun::default() };
    assert_eq!(report_one(store, "t", re_arm, at(10)), Reported::ReArmed);
    let incident = enqueue(20);
    end_one(store, "t", failed("t", "db.down"), at(20));
    let cancelled = enqueue(30);
    assert!(matches!(store.cancel(cancelled, at(30)).unwrap(), CancelResult::Cancelled(_)));
    // Failed, retried, then completed: its latest outcome is `completed`.
    let recovered = enqueue(40);
    end_one(store, "t", failed("t", "disk.full"), at(40));
    assert_eq!(store.retry_incident(recovered, at(41)).unwrap(), RetryIncidentResult::Requeued);
    end_one(store, "t", done(), at(42));
    let other = store.enqueue(vec![job("u")], at(50)).unwrap()[0].id;

    let ids = |filter: ListFilter| store.list(&filter).unwrap().into_iter().map(|r| r.id).collect::<Vec<_>>();
    let kind = |k: OutcomeKind| ListFilter { outcome: Some(k), ..ListFilter::default() };
    assert_eq!(ids(kind(OutcomeKind::Completed)), vec![recovered, completed]);
    assert_eq!(ids(kind(OutcomeKind::Failed)), vec![incident], "an incident retried to completion is not failed");
    assert_eq!(ids(kind(OutcomeKind::Cancelled)), vec![cancelled]);
    assert_eq!(ids(kind(OutcomeKind::BusinessError)), Vec::<JobId>::new());
    let failed_elsewhere = ListFilter { topic: Some("u".into()), ..kind(OutcomeKind::Failed) };
    assert_eq!(ids(failed_elsewhere), Vec::<JobId>::new());
    let code = |text: &str| ListFilter { fault_code: Some(text.into()), ..ListFilter::default() };
    assert_eq!(ids(code("db")), vec![incident], "an ended job's last fault");
    assert_eq!(ids(code("timeout")), vec![gated], "a live job's last fault");
    assert_eq!(ids(ListFilter { state: Some(JobState::Gated), ..code("timeout") }), vec![gated]);
    assert_eq!(ids(ListFilter { outcome: Some(OutcomeKind::Failed), ..code("timeout") }), Vec::<JobId>::new());
    assert_eq!(ids(code("nothing.like.it")), Vec::<JobId>::new());
    let window = ListFilter { enqueued_after: Some(at(10)), enqueued_before: Some(at(30)), ..ListFilter::default() };
    assert_eq!(ids(window), vec![incident, gated], "after is inclusive, before exclusive");
    let early_ended =
        ListFilter { state: Some(JobState::Terminal), enqueued_before: Some(at(25)), ..ListFilter::default() };
    assert_eq!(ids(early_ended), vec![incident, completed]);
    let late = ListFilter { enqueued_after: Some(at(45)), ..ListFilter::default() };
    assert_eq!(ids(late), vec![other]);
    let page = ListFilter { before: Some(recovered), limit: Some(2), ..kind(OutcomeKind::Completed) };
    assert_eq!(ids(page), vec![completed], "filters page with `before`");
}

/// Conformance check: outcome log is ordered and resumable by cursor.
pub fn outcome_log_is_ordered_and_resumable_by_cursor(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let ids: Vec<JobId> =
        (0..5).map(|_| run_to_end(store, "t", Outcome::BusinessStatus { value: "s".into() })).collect();
    let all = store.outcomes_after(0, 100).unwrap();
    assert_eq!(all.iter().map(|o| o.job_id).collect::<Vec<_>>(), ids);
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    let rest = store.outcomes_after(all[1].seq, 2).unwrap();
    assert_eq!(rest.iter().map(|o| o.job_id).collect::<Vec<_>>(), ids[2..4]);
    assert!(store.outcomes_after(all[4].seq, 10).unwrap().is_empty());
}

/// Conformance check: depths and listing follow job states.
pub fn depths_and_listing_follow_job_states(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let ids = ids_of(store.enqueue(vec![job("a"), job("a"), job("b")], now()).unwrap());
    let gated = NewJob { not_before: Some(now() + Duration::from_secs(5)), ..job("b") };
    let gated_id = store.enqueue(vec![gated], now()).unwrap()[0].id;
    let topics = ["a".to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    store.fetch_and_lock(request, now()).unwrap();
    let depths: std::collections::HashMap<_, _> = store.depths().unwrap().into_iter().collect();
    assert_eq!((depths["a"].queued, depths["a"].running, depths["a"].gated), (1, 1, 0));
    assert_eq!((depths["b"].queued, depths["b"].gated), (1, 1));
    assert!(matches!(store.cancel(ids[2], now()).unwrap(), CancelResult::Cancelled(_)));
    let depths: std::collections::HashMap<_, _> = store.depths().unwrap().into_iter().collect();
    assert_eq!(depths["b"].queued, 0);

    let listed = store.list(&ListFilter { topic: Some("b".into()), ..ListFilter::default() }).unwrap();
    assert_eq!(listed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![gated_id, ids[2]], "newest first");
    let gated_only = store.list(&ListFilter { state: Some(JobState::Gated), ..ListFilter::default() }).unwrap();
    assert_eq!(gated_only.iter().map(|r| r.id).collect::<Vec<_>>(), vec![gated_id]);
    let first_page = store.list(&ListFilter { limit: Some(2), ..ListFilter::default() }).unwrap();
    assert_eq!(first_page.len(), 2);
    // The next page: older than the first page's last, none of it again.
    let before = Some(first_page[1].id);
    let next = store.list(&ListFilter { limit: Some(100), before, ..ListFilter::default() }).unwrap();
    assert!(!next.is_empty() && next.iter().all(|job| job.id < first_page[1].id), "{next:?}");
    let all = store.list(&ListFilter { limit: Some(100), ..ListFilter::default() }).unwrap();
    assert_eq!(first_page.len() + next.len(), all.len(), "two pages hold every job once");
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

fn keyed(topic: &str, key: &str) -> NewJob {
    NewJob { key: Some(key.into()), ..job(topic) }
}

fn fetch_all(store: &dyn JobStore, topic: &str) -> Vec<LockedJob> {
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
    assert_eq!(ids_of_records(store), vec![id], "one job");

    let fetched = fetch_all(store, "t");
    assert_eq!(fetched.iter().map(|j| j.id()).collect::<Vec<_>>(), vec![id]);
    let done = Report::Completed { output: b"1".to_vec(), run: AttemptRun::default() };
    assert!(matches!(store.report(vec![(fetched[0].lock, done)], now()).unwrap()[0], Reported::Ended(_)));
    assert_eq!(store.enqueue(vec![keyed("t", "order-1")], now()).unwrap(), vec![again], "the key outlives the job");
    assert_eq!(ids_of_records(store), vec![id]);
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

fn ids_of_records(store: &dyn JobStore) -> Vec<JobId> {
    store.list(&ListFilter::default()).unwrap().iter().map(|r| r.id).collect()
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

    assert!(store.set_paused("p", true).unwrap());
    assert!(!store.set_paused("p", true).unwrap(), "already paused");
    assert_eq!(store.paused().unwrap(), vec!["p".to_owned()]);
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

    assert!(store.set_paused("p", false).unwrap());
    assert!(!store.set_paused("p", false).unwrap(), "already running");
    assert!(store.paused().unwrap().is_empty());
    let empty = store.fetch_and_lock(FetchRequest { topics: &["r".to_owned()], ..request }, later).unwrap();
    assert!(empty.jobs.is_empty() && !empty.paused, "a running topic without jobs is not paused");
    let mut resumed = store.fetch_and_lock(request, later).unwrap().jobs.iter().map(LockedJob::id).collect::<Vec<_>>();
    resumed.sort();
    assert_eq!(resumed, queued[..2]);
}

/// Conformance check: plugin versions are kept with their components, the
/// current pointer moves on a deploy and on a rollback, the config file's
/// digest is remembered, and only the `keep` most recently current
/// versions are kept.
pub fn plugin_versions_are_kept_made_current_and_pruned(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let version = |digest: &str, origin: Origin, by: Option<&str>, secs: u64| StoredVersion {
        digest: digest.into(),
        stamp: Stamp { origin, by: by.map(str::to_owned), at: now() + Duration::from_secs(secs) },
    };
    let digests = |store: &dyn JobStore| -> Vec<String> {
        store.kept_versions("t").unwrap().into_iter().map(|v| v.digest).collect()
    };
    let pointer = |current: &str, config: &str| TopicVersion {
        topic: "t".into(),
        current: current.into(),
        config: Some(config.into()),
    };
    assert!(store.current_versions().unwrap().is_empty());
    store.put_version("t", &version("v1", Origin::Config, None, 1), b"one", true, 3).unwrap();
    assert_eq!(store.current_versions().unwrap(), [pointer("v1", "v1")]);
    let v2 = version("v2", Origin::Deploy, Some("tenant-a"), 2);
    store.put_version("t", &v2, b"two", false, 3).unwrap();
    assert_eq!(store.current_versions().unwrap(), [pointer("v2", "v1")], "the config's digest stays");
    assert_eq!(store.kept_versions("t").unwrap()[0], v2, "origin, deployer and time kept");
    store.put_version("t", &version("v3", Origin::Watch, None, 3), b"three", false, 3).unwrap();
    store.put_version("t", &version("v4", Origin::Deploy, None, 4), b"four", false, 3).unwrap();
    assert_eq!(digests(store), ["v4", "v3", "v2"], "v1 pruned");
    assert_eq!(store.version_component("t", "v1").unwrap(), None);
    assert_eq!(store.version_component("t", "v2").unwrap().as_deref(), Some(&b"two"[..]));

    let back = version("v2", Origin::Rollback, Some("tenant-a"), 5);
    assert!(store.set_current_version("t", &back).unwrap());
    assert_eq!(store.current_versions().unwrap(), [pointer("v2", "v1")]);
    assert_eq!(digests(store), ["v2", "v4", "v3"]);
    assert_eq!(store.kept_versions("t").unwrap()[0].stamp.origin, Origin::Rollback);
    assert!(!store.set_current_version("t", &version("v1", Origin::Rollback, None, 6)).unwrap(), "not kept");
    assert!(!store.set_current_version("u", &version("v2", Origin::Rollback, None, 6)).unwrap(), "no such topic");

    // The same version deployed again keeps its component, moves to the front.
    store.put_version("t", &version("v3", Origin::Config, None, 7), b"three", true, 3).unwrap();
    assert_eq!(store.current_versions().unwrap(), [pointer("v3", "v3")]);
    assert_eq!(digests(store), ["v3", "v2", "v4"]);
    assert_eq!(store.version_component("t", "v3").unwrap().as_deref(), Some(&b"three"[..]));
    store.put_version("u", &version("w1", Origin::Config, None, 8), &[0, 255], true, 3).unwrap();
    assert_eq!(store.current_versions().unwrap().len(), 2);
    assert_eq!(digests(store), ["v3", "v2", "v4"], "another topic's versions are its own");
    assert_eq!(store.version_component("u", "w1").unwrap().as_deref(), Some(&[0, 255][..]));
}

/// Ends one job of `topic` with `outcome` at `at`, enqueued with `key`.
fn end_at(store: &dyn JobStore, outcome: Outcome, key: Option<String>, at: SystemTime) -> JobId {
    let id = store.enqueue(vec![NewJob { key, ..job("t") }], at).unwrap()[0].id;
    let topics = ["t".to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let lock = store.fetch_and_lock(request, at).unwrap().jobs[0].lock;
    let reported = store.report(vec![(lock, Report::End { outcome, run: AttemptRun::default() })], at).unwrap();
    assert!(matches!(reported[0], Reported::Ended(_)));
    id
}

/// Conformance check: eight days of jobs ending every hour, pruned every
/// hour (in small batches) with the default retention, leave the outcome
/// log bounded: completed jobs go after a day, business outcomes after
/// seven, an open incident stays, a discarded one goes after seven days;
/// idempotency keys go with their jobs; the highest pruned sequence number
/// is reported for cursors.
pub fn retention_keeps_the_tables_bounded_over_a_week(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let retention = Retention::default();
    let (hour, t0) = (Duration::from_secs(3600), now());
    let failed = || Outcome::Failed {
        topic: "t".into(),
        attempts: 1,
        last_fault: Fault::new("f", "{}"),
        diagnostic: "d".into(),
        plugin_version: None,
    };
    let open = end_at(store, failed(), None, t0);
    let discarded = end_at(store, failed(), None, t0);
    assert_eq!(store.discard_incident(discarded).unwrap(), DiscardResult::Discarded);
    assert_eq!(store.discard_incident(discarded).unwrap(), DiscardResult::NotAnIncident);
    assert_eq!(store.discard_incident(JobId(999_999)).unwrap(), DiscardResult::NotFound);
    assert_eq!(store.incidents().unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), [open]);
    let first_key = end_at(store, Outcome::Completed { output: b"1".to_vec() }, Some("k0".into()), t0);

    let completed = || Outcome::Completed { output: b"1".to_vec() };
    let mut most = 0;
    let mut last_key = first_key;
    for h in 1..=8 * 24 {
        let at = t0 + h * hour;
        last_key = end_at(store, completed(), Some(format!("k{h}")), at);
        end_at(store, completed(), None, at);
        end_at(store, Outcome::BusinessStatus { value: "s".into() }, None, at);
        end_at(store, Outcome::Cancelled, None, at);
        while store.prune(&retention, at, 3).unwrap().outcomes == 3 {}
        let kept = store.outcomes_after(0, 10_000).unwrap();
        most = most.max(kept.len());
        // A day of completed jobs, a week of business ones, the incidents.
        assert!(kept.len() <= 2 * 25 + 2 * (7 * 24 + 1) + 2, "hour {h}: {} outcomes kept", kept.len());
        let oldest_completed = kept.iter().filter(|o| o.outcome.kind() == "completed").map(|o| o.finished_at).min();
        assert!(oldest_completed.is_none_or(|t| t + retention.completed >= at), "hour {h}: a completed job too old");
    }
    assert!(most > 2 * 7 * 24, "business outcomes were kept a week ({most})");
    assert!(store.get(open).unwrap().is_some(), "an open incident is kept");
    assert_eq!(store.incidents().unwrap().len(), 1);
    assert!(store.get(discarded).unwrap().is_none(), "a discarded incident goes after its retention");
    assert!(store.get(first_key).unwrap().is_none());
    let through = store.pruned_through().unwrap();
    assert!(through > 0);
    let kept = store.outcomes_after(0, 10_000).unwrap();
    assert!(kept.iter().any(|o| o.seq < through), "the open incident is older than what was pruned");

    // Keys go with their jobs: an old key makes a new job, a kept one not.
    let again = |key: &str| store.enqueue(vec![NewJob { key: Some(key.into()), ..job("t") }], now()).unwrap()[0];
    let old = again("k0");
    assert!(old.created && old.id != first_key, "the pruned job's key was forgotten");
    assert_eq!(again(&format!("k{}", 8 * 24)), Enqueued { id: last_key, created: false });
}

/// Conformance check: a capped enqueue counts the tenant's live jobs —
/// queued, gated and running, of its topics only — and enqueues a batch
/// whole or not at all: nothing past the limit; a job ending makes room.
pub fn a_capped_enqueue_counts_live_jobs_of_the_tenants_topics(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let topics = ["a".to_owned(), "b".to_owned()];
    let cap = QueueCap { tenant: "t", topics: &topics, max: 3 };
    let enqueue = |jobs: Vec<NewJob>| store.enqueue_capped(jobs, &cap, now()).unwrap();
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

/// Conformance check: a job's input is kept while it lives and while it is
/// an open incident, and is gone once it ended otherwise.
pub fn a_jobs_input_is_kept_while_it_lives_and_while_it_is_an_incident(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let input = b"{\"name\":\"<input>\"}\xff".to_vec();
    let new = NewJob { input: input.clone(), ..job("t") };
    let id = store.enqueue(vec![new], now()).unwrap()[0].id;
    assert_eq!(store.input(id).unwrap().as_deref(), Some(&input[..]), "queued");
    assert_eq!(store.input(JobId(id.0 + 1000)).unwrap(), None, "no such job");
    let topics = ["t".to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let lock = store.fetch_and_lock(request, now()).unwrap().jobs[0].lock;
    assert_eq!(store.input(id).unwrap().as_deref(), Some(&input[..]), "running");
    let failed = Outcome::Failed {
        topic: "t".into(),
        attempts: 1,
        last_fault: Fault::new("boom", ""),
        diagnostic: "no mapper".into(),
        plugin_version: None,
    };
    store.report(vec![(lock, Report::End { outcome: failed.clone(), run: AttemptRun::default() })], now()).unwrap();
    assert_eq!(store.input(id).unwrap().as_deref(), Some(&input[..]), "an open incident keeps it for its retry");
    assert_eq!(store.discard_incident(id).unwrap(), DiscardResult::Discarded);
    assert_eq!(store.input(id).unwrap(), None, "a discarded incident keeps none");
    let done = run_to_end(store, "t", Outcome::Completed { output: b"1".to_vec() });
    assert_eq!(store.input(done).unwrap(), None, "a completed job keeps none");
}
