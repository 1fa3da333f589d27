//! Conformance checks of [`Pruning`](crate::store::Pruning): retention
//! keeps the tables bounded and the outcome log says what it pruned.

use std::time::Duration;

use crate::fault::Fault;
use crate::outcome::Outcome;
use crate::store::{DiscardResult, Enqueued, JobId, NewJob, Retention};

use super::Backend;
use super::queue::{end_at, job, now};

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
    assert_eq!(store.incidents().unwrap().discard_incident(discarded).unwrap(), DiscardResult::Discarded);
    assert_eq!(store.incidents().unwrap().discard_incident(discarded).unwrap(), DiscardResult::NotAnIncident);
    assert_eq!(store.incidents().unwrap().discard_incident(JobId(999_999)).unwrap(), DiscardResult::NotFound);
    assert_eq!(store.incidents().unwrap().open_incidents().unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), [open]);
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
        while store.pruning().unwrap().prune(&retention, at, 3).unwrap().outcomes == 3 {}
        let kept = store.outcomes_after(0, 10_000).unwrap();
        most = most.max(kept.len());
        // A day of completed jobs, a week of business ones, the incidents.
        assert!(kept.len() <= 2 * 25 + 2 * (7 * 24 + 1) + 2, "hour {h}: {} outcomes kept", kept.len());
        let oldest_completed = kept.iter().filter(|o| o.outcome.kind() == "completed").map(|o| o.finished_at).min();
        assert!(oldest_completed.is_none_or(|t| t + retention.completed >= at), "hour {h}: a completed job too old");
    }
    assert!(most > 2 * 7 * 24, "business outcomes were kept a week ({most})");
    assert!(store.get(open).unwrap().is_some(), "an open incident is kept");
    assert_eq!(store.incidents().unwrap().open_incidents().unwrap().len(), 1);
    assert!(store.get(discarded).unwrap().is_none(), "a discarded incident goes after its retention");
    assert!(store.get(first_key).unwrap().is_none());
    let through = store.pruning().unwrap().pruned_through().unwrap();
    assert!(through > 0);
    let kept = store.outcomes_after(0, 10_000).unwrap();
    assert!(kept.iter().any(|o| o.seq < through), "the open incident is older than what was pruned");

    // Keys go with their jobs: an old key makes a new job, a kept one not.
    let again = |key: &str| store.enqueue(vec![NewJob { key: Some(key.into()), ..job("t") }], now()).unwrap()[0];
    let old = again("k0");
    assert!(old.created && old.id != first_key, "the pruned job's key was forgotten");
    assert_eq!(again(&format!("k{}", 8 * 24)), Enqueued { id: last_key, created: false });
}
