//! Conformance checks of [`Queries`](crate::store::Queries): listing and
//! its filters and pages, and a job's input while the store keeps it.

use std::time::Duration;

use crate::fault::Fault;
use crate::outcome::{Outcome, OutcomeKind};
use crate::store::{
    AttemptRun, CancelResult, DiscardResult, FetchRequest, JobId, JobState, ListFilter, NewJob, Report, Reported,
    RetryIncidentResult,
};

use super::Backend;
use super::queue::{end_one, failed, ids_of, job, now, report_one, run_to_end};

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
    assert_eq!(store.incidents().unwrap().retry_incident(recovered, at(41)).unwrap(), RetryIncidentResult::Requeued);
    end_one(store, "t", done(), at(42));
    let other = store.enqueue(vec![job("u")], at(50)).unwrap()[0].id;

    let ids = |filter: ListFilter| {
        store.queries().unwrap().list(&filter).unwrap().into_iter().map(|r| r.id).collect::<Vec<_>>()
    };
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
    let waiting =
        |retrying| ListFilter { state: Some(JobState::Gated), retrying: Some(retrying), ..Default::default() };
    assert_eq!(ids(waiting(true)), vec![gated], "a job waiting for its retry");
    let scheduled = store.enqueue(vec![NewJob { not_before: Some(at(2000)), ..job("t") }], at(31)).unwrap()[0].id;
    assert_eq!(ids(waiting(false)), vec![scheduled], "a job waiting for its start");
    assert_eq!(ids(ListFilter { retrying: Some(false), ..kind(OutcomeKind::Completed) }), Vec::<JobId>::new());
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

    let listed =
        store.queries().unwrap().list(&ListFilter { topic: Some("b".into()), ..ListFilter::default() }).unwrap();
    assert_eq!(listed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![gated_id, ids[2]], "newest first");
    let gated_only =
        store.queries().unwrap().list(&ListFilter { state: Some(JobState::Gated), ..ListFilter::default() }).unwrap();
    assert_eq!(gated_only.iter().map(|r| r.id).collect::<Vec<_>>(), vec![gated_id]);
    let first_page = store.queries().unwrap().list(&ListFilter { limit: Some(2), ..ListFilter::default() }).unwrap();
    assert_eq!(first_page.len(), 2);
    // The next page: older than the first page's last, none of it again.
    let before = Some(first_page[1].id);
    let next =
        store.queries().unwrap().list(&ListFilter { limit: Some(100), before, ..ListFilter::default() }).unwrap();
    assert!(!next.is_empty() && next.iter().all(|job| job.id < first_page[1].id), "{next:?}");
    let all = store.queries().unwrap().list(&ListFilter { limit: Some(100), ..ListFilter::default() }).unwrap();
    assert_eq!(first_page.len() + next.len(), all.len(), "two pages hold every job once");
}

/// Conformance check: a job's input is kept while it lives and with its
/// outcome; one enqueued with `keep_input: false` keeps it only while it
/// lives and while it is an open incident.
pub fn a_jobs_input_is_kept_with_its_outcome_unless_it_is_dropped(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let input = b"{\"name\":\"<input>\"}\xff".to_vec();
    let new = NewJob { input: input.clone(), keep_input: false, ..job("t") };
    let id = store.enqueue(vec![new], now()).unwrap()[0].id;
    assert_eq!(store.queries().unwrap().input(id).unwrap().as_deref(), Some(&input[..]), "queued");
    assert_eq!(store.queries().unwrap().input(JobId(id.0 + 1000)).unwrap(), None, "no such job");
    let topics = ["t".to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let lock = store.fetch_and_lock(request, now()).unwrap().jobs[0].lock;
    assert_eq!(store.queries().unwrap().input(id).unwrap().as_deref(), Some(&input[..]), "running");
    let failed = Outcome::Failed {
        topic: "t".into(),
        attempts: 1,
        last_fault: Fault::new("boom", ""),
        diagnostic: "no mapper".into(),
        plugin_version: None,
    };
    store.report(vec![(lock, Report::End { outcome: failed.clone(), run: AttemptRun::default() })], now()).unwrap();
    assert_eq!(
        store.queries().unwrap().input(id).unwrap().as_deref(),
        Some(&input[..]),
        "an open incident keeps it for its retry"
    );
    assert!(!store.get(id).unwrap().unwrap().discarded, "an open incident");
    assert_eq!(store.incidents().unwrap().discard_incident(id).unwrap(), DiscardResult::Discarded);
    assert_eq!(store.queries().unwrap().input(id).unwrap(), None, "a discarded incident dropping inputs keeps none");
    assert!(store.get(id).unwrap().unwrap().discarded, "its record says it was discarded");
    let done = run_to_end(store, "t", Outcome::Completed { output: b"1".to_vec() });
    assert_eq!(store.queries().unwrap().input(done).unwrap().as_deref(), Some(&b"{}"[..]), "kept with the outcome");
    assert!(!store.get(done).unwrap().unwrap().discarded);

    // Listed by it: the discarded ones alone, or every job but those.
    let ids = |discarded| {
        let filter = ListFilter { discarded: Some(discarded), ..ListFilter::default() };
        store.queries().unwrap().list(&filter).unwrap().into_iter().map(|r| r.id).collect::<Vec<_>>()
    };
    assert_eq!(ids(true), vec![id]);
    assert_eq!(ids(false), vec![done]);

    // Each way a job ends keeps the input of a job that keeps it, and drops
    // that of one that does not: a completion, an end, a cancel, a
    // discarded incident, an incident retried and then completed.
    let completed = || Report::Completed { output: b"1".to_vec(), run: AttemptRun::default() };
    let cancelled = || Report::End { outcome: Outcome::Cancelled, run: AttemptRun::default() };
    let fail = || Report::End { outcome: failed.clone(), run: AttemptRun::default() };
    let mut inputs = std::collections::HashMap::new();
    for keep_input in [true, false] {
        let enqueue = |inputs: &mut std::collections::HashMap<JobId, Vec<u8>>| {
            let input = format!("{{\"n\":{}}}", inputs.len()).into_bytes();
            let id = store.enqueue(vec![NewJob { input: input.clone(), keep_input, ..job("k") }], now()).unwrap()[0].id;
            inputs.insert(id, input);
            id
        };
        let mut one = |report: Report| {
            let id = enqueue(&mut inputs);
            report_one(store, "k", report, now());
            id
        };
        let (by_completion, by_end) = (one(completed()), one(cancelled()));
        let (discarded, retried) = (one(fail()), one(fail()));
        let cancelled = enqueue(&mut inputs);
        store.cancel(cancelled, now()).unwrap();
        let input = |id| store.queries().unwrap().input(id).unwrap();
        assert_eq!(input(discarded).as_ref(), inputs.get(&discarded), "an open incident keeps it");
        store.incidents().unwrap().discard_incident(discarded).unwrap();
        store.incidents().unwrap().retry_incident(retried, now()).unwrap();
        assert_eq!(input(retried).as_ref(), inputs.get(&retried), "live again");
        report_one(store, "k", completed(), now());
        let ended = [
            ("completed", by_completion),
            ("ended", by_end),
            ("cancelled", cancelled),
            ("discarded", discarded),
            ("retried and completed", retried),
        ];
        for (how, id) in ended {
            let want = inputs.get(&id).filter(|_| keep_input);
            assert_eq!(input(id).as_ref(), want, "{how}, keep_input {keep_input}");
        }
    }
}
