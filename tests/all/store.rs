//! The in-memory store's own contract: outcome log and cursor, retention,
//! depths and listing.

use std::time::{Duration, SystemTime};

use husk_host::fault::Fault;
use husk_host::outcome::Outcome;
use husk_host::retry::RetryPolicySpec;
use husk_host::store::{
    CancelResult, FetchRequest, JobId, JobState, JobStore, ListFilter, MemoryStore, NewJob, Report, Reported,
};

const T0: Duration = Duration::from_secs(1_000_000);

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + T0
}

fn job(topic: &str) -> NewJob {
    NewJob { topic: topic.into(), input: b"{}".to_vec(), policy: RetryPolicySpec::None, not_before: None }
}

fn run_to_end(store: &MemoryStore, topic: &str, outcome: Outcome) -> JobId {
    let id = store.enqueue(vec![job(topic)], now()).unwrap()[0];
    let topics = [topic.to_owned()];
    let request = FetchRequest { worker: "w", topics: &topics, max: 1, lock_duration: Duration::from_secs(30) };
    let fetched = store.fetch_and_lock(request, now()).unwrap();
    let lock = fetched.jobs[0].lock;
    assert!(matches!(store.report(vec![(lock, Report::End(outcome))], now()).unwrap()[0], Reported::Ended(_)));
    id
}

fn failed() -> Outcome {
    Outcome::Failed {
        topic: "t".into(),
        attempts: 1,
        last_fault: Fault::new("x", ""),
        diagnostic: "x".into(),
        plugin_version: None,
    }
}

#[test]
fn outcome_log_is_ordered_and_resumable_by_cursor() {
    let store = MemoryStore::new();
    let ids: Vec<JobId> =
        (0..5).map(|_| run_to_end(&store, "t", Outcome::BusinessStatus { value: "s".into() })).collect();
    let all = store.outcomes_after(0, 100).unwrap();
    assert_eq!(all.iter().map(|o| o.job_id).collect::<Vec<_>>(), ids);
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    let rest = store.outcomes_after(all[1].seq, 2).unwrap();
    assert_eq!(rest.iter().map(|o| o.job_id).collect::<Vec<_>>(), ids[2..4]);
    assert!(store.outcomes_after(all[4].seq, 10).unwrap().is_empty());
}

#[test]
fn retention_forgets_old_outcomes_but_keeps_open_incidents() {
    let store = MemoryStore::with_retained_outcomes(2);
    let incident = run_to_end(&store, "t", failed());
    let old = run_to_end(&store, "t", Outcome::Cancelled);
    let recent: Vec<JobId> = (0..2).map(|_| run_to_end(&store, "t", Outcome::Cancelled)).collect();
    assert!(store.get(old).unwrap().is_none(), "evicted beyond retention");
    for id in &recent {
        assert_eq!(store.get(*id).unwrap().unwrap().outcome.unwrap().outcome, Outcome::Cancelled);
    }
    let kept = store.get(incident).unwrap().unwrap();
    assert_eq!(kept.state, JobState::Terminal);
    assert!(matches!(kept.outcome.unwrap().outcome, Outcome::Failed { .. }));
    assert_eq!(store.incidents().unwrap().len(), 1);
    assert_eq!(store.outcomes_after(0, 10).unwrap().len(), 2);
}

#[test]
fn depths_and_listing_follow_job_states() {
    let store = MemoryStore::new();
    let ids = store.enqueue(vec![job("a"), job("a"), job("b")], now()).unwrap();
    let gated = NewJob { not_before: Some(now() + Duration::from_secs(5)), ..job("b") };
    let gated_id = store.enqueue(vec![gated], now()).unwrap()[0];
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
    assert_eq!(store.list(&ListFilter { limit: Some(2), ..ListFilter::default() }).unwrap().len(), 2);
}
