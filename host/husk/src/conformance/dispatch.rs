//! Conformance checks of the dispatcher on a store: classification,
//! retry by re-arm, delivery, locks, cancels, attempt histories.

use std::time::Duration;

use crate::clock::Clock;
use crate::dispatch::TopicPolicy;
use crate::fault::{Fault, codes};
use crate::outcome::Outcome;
use crate::permanent::PermanentFaults;
use crate::retry::RetryPolicySpec;
use crate::sandbox::Ending;
use crate::store::{CancelResult, JobId, JobState, Report, Reported};
use serde_json::json;

use super::{Backend, LOCK, Rig, rules};

pub(super) fn fixed(max_attempts: u32, secs: u64) -> RetryPolicySpec {
    RetryPolicySpec::Fixed { max_attempts, delay: Duration::from_secs(secs) }
}

pub(super) fn payments_mapper() -> crate::classify::ErrorMapper {
    rules(json!([
        { "code": "payment.declined", "pointer": "/reason", "classify_as": "business-error" },
        { "code": "account.*", "pointer": "/status", "classify_as": "business-status" },
        { "code": "validation.*", "classify_as": "technical-non-retryable", "message": "bad request" },
    ]))
}

pub(super) fn payments_rig(backend: &dyn Backend, retry: RetryPolicySpec) -> Rig {
    let rig = Rig::on(backend, None);
    rig.dispatcher.set_topic(
        "payments",
        TopicPolicy { retry: Some(retry), mapper: Some(payments_mapper()), ..Default::default() },
    );
    rig
}

/// Conformance check: raw fault classified to business error is delivered terminal.
pub fn raw_fault_classified_to_business_error_is_delivered_terminal(backend: &dyn Backend) {
    let rig = payments_rig(backend, fixed(5, 1));
    let id = rig.enqueue("payments");
    let job = rig.fetch_one("payments");
    let fault = Fault::json("payment.declined", &json!({ "reason": "insufficient-funds" }));
    assert!(matches!(rig.dispatcher.report(&job, Ending::Fault(fault), None).unwrap(), Reported::Ended(_)));
    assert_eq!(
        rig.outcome_of(id),
        Outcome::BusinessError { code: "insufficient-funds".into(), message: "fault payment.declined".into() }
    );
    assert_eq!(rig.dispatcher.totals().retries, 0);
}

/// Conformance check: raw fault classified to business status is delivered terminal.
pub fn raw_fault_classified_to_business_status_is_delivered_terminal(backend: &dyn Backend) {
    let rig = payments_rig(backend, fixed(5, 1));
    let id = rig.enqueue("payments");
    let job = rig.fetch_one("payments");
    let fault = Fault::json("account.frozen", &json!({ "status": "frozen" }));
    rig.dispatcher.report(&job, Ending::Fault(fault), None).unwrap();
    assert_eq!(rig.outcome_of(id), Outcome::BusinessStatus { value: "frozen".into() });
}

/// Conformance check: unmatched fault is technical and retried.
pub fn unmatched_fault_is_technical_and_retried(backend: &dyn Backend) {
    let rig = payments_rig(backend, fixed(5, 1));
    let id = rig.enqueue("payments");
    let job = rig.fetch_one("payments");
    assert_eq!(rig.fail(&job, "http.503"), Reported::ReArmed);
    assert!(rig.outcomes_of(id).is_empty(), "a retried attempt never reaches the sink");
    let record = rig.get(id);
    assert_eq!((record.state, record.attempt), (JobState::Gated, 2));
    assert_eq!(record.last_fault.unwrap().code, "http.503");
}

/// Conformance check: technical non retryable fails at once.
pub fn technical_non_retryable_fails_at_once(backend: &dyn Backend) {
    let rig = payments_rig(backend, fixed(5, 1));
    let id = rig.enqueue("payments");
    let job = rig.fetch_one("payments");
    rig.fail(&job, "validation.missing-amount");
    match rig.outcome_of(id) {
        Outcome::Failed { attempts, diagnostic, .. } => assert_eq!((attempts, diagnostic.as_str()), (1, "bad request")),
        other => panic!("expected Failed, got {other:?}"),
    }
}

/// Conformance check: permanent faults end at once and a topic's list replaces the default.
pub fn permanent_faults_end_at_once_and_a_topic_list_replaces_the_default(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(5, 1));
    let judged = |rig: &Rig, topic: &str, code: &str| {
        rig.enqueue(topic);
        let job = rig.fetch_one(topic);
        let report =
            rig.dispatcher.judge(&job, Ending::Fault(Fault::new(code, "")), crate::store::AttemptRun::default());
        rig.dispatcher.submit_reports(vec![(job.lock, report.clone())]).unwrap();
        report
    };
    // husk's own, by default: a denied host, an input the guest cannot read.
    for code in ["http.http-request-denied", "invalid-input"] {
        match judged(&rig, "t", code) {
            Report::End { outcome: Outcome::Failed { attempts: 1, diagnostic, .. }, .. } => {
                assert!(diagnostic.contains("permanent fault"), "{diagnostic}");
            }
            other => panic!("{code}: expected Failed at once, got {other:?}"),
        }
    }
    assert!(matches!(judged(&rig, "t", "http.connection-refused"), Report::ReArm { .. }));
    // A topic's own list replaces the default; a prefix ends in `*`.
    let own = PermanentFaults::new(["billing.*"]).unwrap();
    rig.dispatcher.set_topic("own", TopicPolicy { retry: Some(fixed(5, 1)), permanent: own, ..Default::default() });
    assert!(matches!(judged(&rig, "own", "billing.card-declined"), Report::End { .. }));
    assert!(matches!(judged(&rig, "own", "http.http-request-denied"), Report::ReArm { .. }), "not in its list");
    // A mapper's business classification still wins: only technical
    // faults are looked up.
    let mapper = rules(json!([{ "code": "invalid-input", "classify_as": "business-error" }]));
    let policy = TopicPolicy { retry: Some(fixed(5, 1)), mapper: Some(mapper), ..Default::default() };
    rig.dispatcher.set_topic("mapped", policy);
    let report = judged(&rig, "mapped", "invalid-input");
    assert!(matches!(report, Report::End { outcome: Outcome::BusinessError { .. }, .. }), "{report:?}");
    assert_eq!(rig.dispatcher.totals().retries, 2, "only the two retryable faults were retried");
}

/// Conformance check: no mapper means technical.
pub fn no_mapper_means_technical(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(2, 1));
    rig.enqueue("t");
    let job = rig.fetch_one("t");
    let fault = Fault::json("payment.declined", &json!({ "reason": "insufficient-funds" }));
    let report = rig.dispatcher.judge(&job, Ending::Fault(fault), crate::store::AttemptRun::default());
    assert!(matches!(report, Report::ReArm { .. }), "{report:?}");
}

/// Conformance check: host reserved codes go through the mapper.
pub fn host_reserved_codes_go_through_the_mapper(backend: &dyn Backend) {
    let rig = Rig::on(backend, None);
    let mapper = rules(json!([{ "code": "husk.timeout", "classify_as": "business-status", "status": "too-slow" }]));
    rig.dispatcher.set_topic("t", TopicPolicy { retry: Some(fixed(3, 1)), mapper: Some(mapper), ..Default::default() });
    let id = rig.enqueue("t");
    let job = rig.fetch_one("t");
    rig.fail(&job, codes::TIMEOUT);
    assert_eq!(rig.outcome_of(id), Outcome::BusinessStatus { value: "too-slow".into() });
}

/// Conformance check: two level policy is resolved at enqueue and stored.
pub fn two_level_policy_is_resolved_at_enqueue_and_stored(backend: &dyn Backend) {
    let engine_default = fixed(7, 2);
    let topic_policy = fixed(4, 9);
    let rig = Rig::on(backend, Some(engine_default));
    rig.dispatcher.set_topic("own", TopicPolicy { retry: Some(topic_policy), mapper: None, ..Default::default() });
    rig.dispatcher.set_topic("inherits", TopicPolicy::default());
    assert_eq!(rig.get(rig.enqueue("own")).policy, topic_policy);
    assert_eq!(rig.get(rig.enqueue("inherits")).policy, engine_default);

    let bare = Rig::on(backend, None);
    bare.dispatcher.set_topic("t", TopicPolicy::default());
    assert_eq!(bare.get(bare.enqueue("t")).policy, RetryPolicySpec::default());
    assert_eq!(RetryPolicySpec::default().max_attempts(), 3);
}

/// Conformance check: unknown topic is refused and nothing is enqueued.
pub fn unknown_topic_is_refused_and_nothing_is_enqueued(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(2, 1));
    assert!(rig.dispatcher.enqueue("nope", b"{}".to_vec()).is_err());
    assert_eq!(rig.dispatcher.totals().enqueued, 0);
    assert!(rig.dispatcher.store().depths().unwrap().iter().all(|(_, depth)| depth.live() == 0));
}

/// Conformance check: sink sees one terminal outcome per job never a retried attempt.
pub fn sink_sees_one_terminal_outcome_per_job_never_a_retried_attempt(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 1));
    let id = rig.enqueue("t");
    for _ in 0..2 {
        let job = rig.fetch_one("t");
        assert_eq!(rig.fail(&job, "flaky"), Reported::ReArmed);
        assert!(rig.sink.is_empty());
        rig.clock.advance(Duration::from_secs(1));
    }
    let job = rig.fetch_one("t");
    assert_eq!(job.attempt, 3);
    rig.complete(&job);
    assert_eq!(rig.sink.len(), 1);
    assert!(matches!(rig.outcome_of(id), Outcome::Completed { .. }));
    let outcome = &rig.outcomes_of(id)[0];
    assert_eq!(outcome.attempts, 3);
    assert_eq!(rig.dispatcher.totals().retries, 2);
}

/// Conformance check: technical fault re arms and is refetched only after not before.
pub fn technical_fault_re_arms_and_is_refetched_only_after_not_before(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 10));
    let id = rig.enqueue("t");
    let job = rig.fetch_one("t");
    rig.fail(&job, "flaky");
    assert!(rig.fetch("t", 10).is_empty());
    rig.clock.advance(Duration::from_secs(9));
    assert!(rig.fetch("t", 10).is_empty(), "fetched before its gate");
    rig.clock.advance(Duration::from_secs(1));
    let again = rig.fetch_one("t");
    assert_eq!((again.id(), again.attempt), (id, 2));
}

/// Conformance check: business outcomes are never retried.
pub fn business_outcomes_are_never_retried(backend: &dyn Backend) {
    let rig = payments_rig(backend, fixed(5, 1));
    for code in ["payment.declined", "account.frozen"] {
        let id = rig.enqueue("payments");
        let job = rig.fetch_one("payments");
        let fault = Fault::json(code, &json!({ "reason": "r", "status": "s" }));
        assert!(matches!(rig.dispatcher.report(&job, Ending::Fault(fault), None).unwrap(), Reported::Ended(_)));
        assert_eq!(rig.outcomes_of(id).len(), 1);
    }
    assert_eq!(rig.dispatcher.totals().retries, 0);
    rig.clock.advance(Duration::from_secs(3600));
    assert!(rig.fetch("payments", 10).is_empty());
}

/// Conformance check: a report after lock expiry is dropped.
pub fn a_report_after_lock_expiry_is_dropped(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 0));
    let id = rig.enqueue("t");
    let job = rig.fetch_one("t");
    rig.clock.advance(LOCK);
    assert_eq!(rig.complete(&job), Reported::LockLost);
    assert_eq!(rig.fail(&job, "late"), Reported::LockLost);
    assert!(rig.sink.is_empty());
    assert_eq!(rig.dispatcher.totals().reports_dropped, 2);
    let again = rig.fetch_one("t");
    assert_eq!((again.id(), again.attempt), (id, 2));
    assert_eq!(rig.get(id).last_fault.unwrap().code, codes::LOCK_EXPIRED);
    // The old holder cannot report over the new one.
    assert_eq!(rig.complete(&job), Reported::LockLost);
    assert!(matches!(rig.complete(&again), Reported::Ended(_)));
    assert_eq!(rig.outcomes_of(id).len(), 1);
}

/// Conformance check: lock expiry counts as an attempt.
pub fn lock_expiry_counts_as_an_attempt(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(2, 0));
    let id = rig.enqueue("t");
    let first = rig.fetch_one("t");
    assert_eq!(first.attempt, 1);
    rig.clock.advance(LOCK);
    let second = rig.fetch_one("t");
    assert_eq!(second.attempt, 2);
    rig.clock.advance(LOCK);
    assert!(rig.fetch("t", 10).is_empty(), "a poison job is not retried forever");
    match rig.outcome_of(id) {
        Outcome::Failed { attempts, last_fault, .. } => {
            assert_eq!(attempts, 2);
            assert_eq!(last_fault.code, codes::LOCK_EXPIRED);
        }
        other => panic!("expected Failed, got {other:?}"),
    }
}

/// Conformance check: extending a lock keeps the job.
pub fn extending_a_lock_keeps_the_job(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(2, 0));
    let id = rig.enqueue("t");
    let job = rig.fetch_one("t");
    let now = rig.clock.now();
    assert!(rig.dispatcher.store().extend_lock(job.lock, now + 2 * LOCK, now).unwrap());
    rig.clock.advance(LOCK + Duration::from_secs(1));
    assert!(rig.fetch("t", 1).is_empty(), "the extended lock still holds");
    assert!(matches!(rig.complete(&job), Reported::Ended(_)));
    assert_eq!(rig.outcomes_of(id).len(), 1);
}

/// Conformance check: cancelling a queued and a gated job ends it once.
pub fn cancelling_a_queued_and_a_gated_job_ends_it_once(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 10));
    let queued = rig.enqueue("t");
    assert!(matches!(rig.dispatcher.cancel(queued).unwrap(), CancelResult::Cancelled(_)));
    assert_eq!(rig.outcome_of(queued), Outcome::Cancelled);
    assert_eq!(rig.dispatcher.cancel(queued).unwrap(), CancelResult::AlreadyEnded);

    let gated = rig.enqueue("t");
    let job = rig.fetch_one("t");
    rig.fail(&job, "flaky");
    assert_eq!(rig.get(gated).state, JobState::Gated);
    assert!(matches!(rig.dispatcher.cancel(gated).unwrap(), CancelResult::Cancelled(_)));
    rig.clock.advance(Duration::from_secs(60));
    assert!(rig.fetch("t", 10).is_empty());
    assert_eq!(rig.outcome_of(gated), Outcome::Cancelled);
    assert_eq!(rig.outcomes_of(gated)[0].attempts, 1);
}

/// Conformance check: cancelling a running job ends it cancelled whatever it reports.
pub fn cancelling_a_running_job_ends_it_cancelled_whatever_it_reports(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 10));
    let id = rig.enqueue("t");
    let job = rig.fetch_one("t");
    let guard = rig.dispatcher.running(id);
    assert!(!guard.token().is_cancelled());
    assert_eq!(rig.dispatcher.cancel(id).unwrap(), CancelResult::Cancelling);
    assert!(guard.token().is_cancelled(), "the running job's token is cancelled");
    rig.complete(&job);
    drop(guard);
    assert_eq!(rig.outcome_of(id), Outcome::Cancelled);
}

/// Conformance check: a cancel racing ahead of registration still reaches the job.
pub fn a_cancel_racing_ahead_of_registration_still_reaches_the_job(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 10));
    let id = rig.enqueue("t");
    let _job = rig.fetch_one("t");
    assert_eq!(rig.dispatcher.cancel(id).unwrap(), CancelResult::Cancelling);
    let guard = rig.dispatcher.running(id);
    assert!(guard.token().is_cancelled());
}

/// Conformance check: a job registering after a shutdowns interruption is interrupted too.
pub fn a_job_registering_after_a_shutdowns_interruption_is_interrupted_too(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 10));
    let (first, second) = (rig.enqueue("t"), rig.enqueue("t"));
    let _jobs = rig.fetch("t", 2);
    let running = rig.dispatcher.running(first);
    rig.dispatcher.interrupt_running();
    assert!(running.token().is_cancelled());
    // The second job's worker passed its stop check before the shutdown
    // and registers only now, after the sweep.
    let late = rig.dispatcher.running(second);
    assert!(late.token().is_cancelled(), "a late registration is interrupted too");
}

/// Conformance check: status reads come from the published snapshot.
pub fn status_reads_come_from_the_published_snapshot(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 10));
    rig.enqueue("t");
    rig.enqueue("t");
    let before = rig.dispatcher.snapshot();
    assert_eq!(before.totals.enqueued, 0, "not published yet");
    let published = rig.dispatcher.publish_snapshot().unwrap();
    assert_eq!(published.totals.enqueued, 2);
    assert_eq!(published.depths["t"].queued, 2);
    assert_eq!(*rig.dispatcher.snapshot(), *published);
}

/// (attempt, plugin version, fault code) of each recorded attempt of `id`.
pub(super) fn history(rig: &Rig, id: JobId) -> Vec<(u32, Option<String>, Option<String>)> {
    let attempts = rig.get(id).attempts;
    attempts.into_iter().map(|a| (a.attempt, a.plugin_version, a.fault.map(|f| f.code))).collect()
}

pub(super) fn version(v: &str) -> Option<String> {
    Some(v.to_owned())
}

/// Conformance check: every spent attempt is recorded with its plugin version.
pub fn every_spent_attempt_is_recorded_with_its_plugin_version(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(5, 1));
    let id = rig.enqueue("t");
    let mut reported_at = Vec::new();
    for v in ["v1", "v2"] {
        let job = rig.fetch_one("t");
        let fault = Ending::Fault(Fault::new("http.503", format!("on {v}")));
        assert_eq!(rig.dispatcher.report(&job, fault, Some(v)).unwrap(), Reported::ReArmed);
        reported_at.push(rig.clock.now());
        rig.clock.advance(Duration::from_secs(1));
    }
    // A release gives the attempt back unspent: nothing recorded.
    let job = rig.fetch_one("t");
    assert_eq!(rig.dispatcher.submit_reports(vec![(job.lock, Report::Release)]).unwrap(), vec![Reported::Released]);
    assert_eq!(rig.get(id).attempts.len(), 2);
    let job = rig.fetch_one("t");
    assert_eq!(job.attempt, 3);
    rig.clock.advance(Duration::from_secs(1));
    let done = rig.dispatcher.report(&job, Ending::Returned(b"1".to_vec()), Some("v3")).unwrap();
    assert!(matches!(done, Reported::Ended(_)));
    reported_at.push(rig.clock.now());

    assert_eq!(
        history(&rig, id),
        vec![
            (1, version("v1"), Some("http.503".into())),
            (2, version("v2"), Some("http.503".into())),
            (3, version("v3"), None),
        ]
    );
    let record = rig.get(id);
    assert_eq!(record.attempts.iter().map(|a| a.finished_at).collect::<Vec<_>>(), reported_at);
    assert_eq!(record.attempts[0].fault.as_ref().unwrap().body, b"on v1");
    if let Some(queries) = rig.dispatcher.store().supports().queries {
        let listed = queries.list(&Default::default()).unwrap();
        assert!(listed.iter().all(|r| r.attempts.is_empty()), "`list` leaves attempts to `get`");
    }
}

/// Conformance check: each attempt records its run's start, duration and
/// fuel, on the re-arm, completion and end paths alike.
pub fn each_attempt_records_its_start_duration_and_fuel(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(5, 1));
    let run = |rig: &Rig, micros: u64, fuel: u64| crate::store::AttemptRun {
        plugin_version: version("v1"),
        started_at: Some(rig.clock.now()),
        duration: Some(Duration::from_micros(micros)),
        fuel: Some(fuel),
    };
    let submit = |job: &crate::store::LockedJob, ending: Ending, micros: u64, fuel: u64| {
        let started = rig.clock.now();
        let report = rig.dispatcher.judge(job, ending, run(&rig, micros, fuel));
        rig.clock.advance(Duration::from_secs(2));
        (started, rig.dispatcher.submit_reports(vec![(job.lock, report)]).unwrap().remove(0))
    };
    let id = rig.enqueue("t");
    let job = rig.fetch_one("t");
    let (first, reported) = submit(&job, Ending::Fault(Fault::new("http.503", "")), 1_500, 1_234);
    assert_eq!(reported, Reported::ReArmed);
    let job = rig.fetch_one("t");
    let (second, reported) = submit(&job, Ending::Returned(b"1".to_vec()), 2_000_000, 42);
    assert!(matches!(reported, Reported::Ended(_)));
    let timeline = |id: JobId| {
        let attempts = rig.get(id).attempts;
        attempts.iter().map(|a| (a.attempt, a.started_at, a.duration_us, a.fuel)).collect::<Vec<_>>()
    };
    assert_eq!(
        timeline(id),
        vec![(1, Some(first), Some(1_500), Some(1_234)), (2, Some(second), Some(2_000_000), Some(42))]
    );
    let cancelled = rig.enqueue("t");
    let job = rig.fetch_one("t");
    let (started, reported) = submit(&job, Ending::Cancelled, 7, 0);
    assert!(matches!(reported, Reported::Ended(_)));
    assert_eq!(timeline(cancelled), vec![(1, Some(started), Some(7), Some(0))]);
}

/// A guest chooses its fault bodies: a NUL byte, and a JSON body holding a
/// `\u0000` escape, are kept in the history (and the fault) like any other
/// bytes, on the completion fast path and the re-arm and end paths alike.
/// Conformance check: fault bodies with nul are kept in the history.
pub fn fault_bodies_with_nul_are_kept_in_the_history(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 1));
    let id = rig.enqueue("t");
    let bodies: [&[u8]; 3] = [b"raw\0nul", br#"{"s":"a\u0000b"}"#, b"\0"];
    for body in bodies {
        let job = rig.fetch_one("t");
        let report = rig.dispatcher.report(&job, Ending::Fault(Fault::new("nul", body.to_vec())), Some("v1"));
        assert!(matches!(report.unwrap(), Reported::ReArmed | Reported::Ended(_)));
        rig.clock.advance(Duration::from_secs(1));
    }
    let record = rig.get(id);
    let kept: Vec<&[u8]> = record.attempts.iter().map(|a| a.fault.as_ref().unwrap().body.as_slice()).collect();
    assert_eq!(kept, bodies);
    // The completion path appends after such a history too (where the
    // incident can be retried).
    if rig.dispatcher.store().supports().incidents.is_some() {
        rig.dispatcher.retry_incident(id).unwrap();
        let job = rig.fetch_one("t");
        rig.dispatcher.report(&job, Ending::Returned(b"1".to_vec()), Some("v2")).unwrap();
        assert_eq!(rig.get(id).attempts.len(), 4);
    }
}

/// A history keeps the first `HISTORY_FAULT_BODY` bytes of each fault; the
/// job's `last_fault` keeps the whole of its last one.
/// Conformance check: a history keeps a cut of each fault body.
pub fn a_history_keeps_a_cut_of_each_fault_body(backend: &dyn Backend) {
    let rig = Rig::with_topic(backend, fixed(3, 1));
    let id = rig.enqueue("t");
    let body = "x".repeat(3 * crate::store::HISTORY_FAULT_BODY).into_bytes();
    let job = rig.fetch_one("t");
    rig.dispatcher.report(&job, Ending::Fault(Fault::new("big", body.clone())), None).unwrap();
    let record = rig.get(id);
    let kept = &record.attempts[0].fault.as_ref().unwrap().body;
    assert_eq!(kept, &body[..crate::store::HISTORY_FAULT_BODY]);
    assert_eq!(record.last_fault.unwrap().body, body);
}

/// Conformance check: a business outcome is an attempt without a fault.
pub fn a_business_outcome_is_an_attempt_without_a_fault(backend: &dyn Backend) {
    let rig = payments_rig(backend, fixed(5, 1));
    let id = rig.enqueue("payments");
    let job = rig.fetch_one("payments");
    let fault = Fault::json("payment.declined", &json!({ "reason": "insufficient-funds" }));
    rig.dispatcher.report(&job, Ending::Fault(fault), Some("v7")).unwrap();
    assert_eq!(history(&rig, id), vec![(1, version("v7"), None)]);
}
