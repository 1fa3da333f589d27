//! Conformance checks of [`Incidents`](crate::store::Incidents): an
//! exhausted job is an open incident; a retry gives it a fresh budget and
//! continues its history.

use std::time::Duration;

use crate::fault::{Fault, codes};
use crate::outcome::Outcome;
use crate::sandbox::Ending;
use crate::store::{Reported, RetryIncidentResult};

use super::dispatch::{fixed, history, version};
use super::{Backend, LOCK, Rig};
#[allow(unused_imports)]
use crate::clock::Clock;

/// Conformance check: exhaustion is a failed incident with topic attempts and last fault.
pub fn exhaustion_is_a_failed_incident_with_topic_attempts_and_last_fault(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 1));
    let id = rig.enqueue("t");
    for attempt in 1..=3 {
        let job = rig.fetch_one("t");
        assert_eq!(job.attempt, attempt);
        rig.dispatcher
            .report(&job, Ending::Fault(Fault::new("boom", format!("attempt {attempt}"))), Some("digest-1"))
            .unwrap();
        rig.clock.advance(Duration::from_secs(1));
    }
    match rig.outcome_of(id) {
        Outcome::Failed { topic, attempts, last_fault, plugin_version, .. } => {
            assert_eq!(topic, "t");
            assert_eq!(attempts, 3);
            assert_eq!(last_fault, Fault::new("boom", "attempt 3"));
            assert_eq!(plugin_version.as_deref(), Some("digest-1"));
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    let incidents = rig.dispatcher.store().incidents().unwrap().open_incidents().unwrap();
    assert_eq!(incidents.iter().map(|r| r.id).collect::<Vec<_>>(), vec![id]);
    let counts = || rig.dispatcher.store().incidents().unwrap().open_incident_counts().unwrap();
    assert_eq!(counts(), vec![("t".to_owned(), 1)], "counted by topic");

    // Retrying the incident re-arms it with a fresh attempt budget, its
    // attempts numbered on.
    assert_eq!(rig.dispatcher.retry_incident(id).unwrap(), RetryIncidentResult::Requeued);
    assert!(rig.dispatcher.store().incidents().unwrap().open_incidents().unwrap().is_empty());
    assert_eq!(counts(), Vec::new(), "a retried incident is no longer counted");
    assert_eq!(rig.dispatcher.retry_incident(id).unwrap(), RetryIncidentResult::NotAnIncident);
    for attempt in 4..=5 {
        let job = rig.fetch_one("t");
        assert_eq!(job.attempt, attempt, "numbered on across the retry");
        assert_eq!(rig.fail(&job, "boom"), Reported::ReArmed, "a fresh budget of 3 attempts");
        rig.clock.advance(Duration::from_secs(1));
    }
    let job = rig.fetch_one("t");
    assert_eq!(job.attempt, 6);
    rig.fail(&job, "boom");
    let record = rig.get(id);
    match record.outcome.map(|o| o.outcome) {
        Some(Outcome::Failed { attempts, .. }) => assert_eq!(attempts, 6, "every attempt counted"),
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(record.attempt, 6);
    assert_eq!(record.attempts.iter().map(|a| a.attempt).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
}

/// Conformance check: lock expiries are attempts without a version and a retried incident continues its history.
pub fn lock_expiries_are_attempts_without_a_version_and_a_retried_incident_continues_its_history(
    backend: &dyn Backend,
) {
    let rig = Rig::with_topic(backend, fixed(2, 0));
    let id = rig.enqueue("t");
    let first = rig.fetch_one("t");
    rig.clock.advance(LOCK);
    let second = rig.fetch_one("t");
    assert_eq!(second.attempt, 2);
    let expired = (1, None, Some(codes::LOCK_EXPIRED.to_owned()));
    assert_eq!(history(&rig, id), vec![expired.clone()]);
    assert_eq!(rig.get(id).attempts[0].finished_at, rig.clock.now(), "recorded when reclaimed");
    // The report of a lost lock is dropped: nothing recorded.
    assert_eq!(rig.complete(&first), Reported::LockLost);
    assert_eq!(history(&rig, id).len(), 1);
    rig.clock.advance(LOCK);
    assert!(rig.fetch("t", 10).is_empty());
    assert!(matches!(rig.outcome_of(id), Outcome::Failed { .. }));
    let incident = (2, None, Some(codes::LOCK_EXPIRED.to_owned()));
    assert_eq!(history(&rig, id), vec![expired.clone(), incident.clone()], "kept when the job ends");

    assert_eq!(rig.dispatcher.retry_incident(id).unwrap(), RetryIncidentResult::Requeued);
    assert_eq!(history(&rig, id).len(), 2, "kept when the incident is retried");
    for attempt in 3..=4 {
        let job = rig.fetch_one("t");
        assert_eq!(job.attempt, attempt);
        rig.dispatcher.report(&job, Ending::Fault(Fault::new("boom", "")), Some("v2")).unwrap();
    }
    assert_eq!(rig.dispatcher.store().incidents().unwrap().open_incidents().unwrap().len(), 1, "failed again");
    let boom = |attempt| (attempt, version("v2"), Some("boom".to_owned()));
    assert_eq!(history(&rig, id), vec![expired, incident, boom(3), boom(4)]);
}
