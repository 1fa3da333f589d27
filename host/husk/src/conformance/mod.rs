//! The store conformance suite (feature `conformance`): the same checks
//! run against any backend, in the order a new store meets them — the
//! queue ([`JobStore`]: `queue`) and the dispatcher's semantics on it
//! (classification, retry by re-arm, delivery, locks, cancels, attempt
//! histories: `dispatch`), then each capability the store supports, in a
//! module of its own (`queries`, `incidents`, `pauses`, `pruning`,
//! `versions`, `shared`). A backend that passes them is a backend: husk
//! runs them against its memory, SQLite and PostgreSQL stores, and the
//! queue's against a store with nothing more. In a backend's tests:
//!
//! ```ignore
//! mod conformance {
//!     use std::sync::Arc;
//!     use husk::conformance::Fresh;
//!
//!     // One test per check, each on fresh stores made by the closure; the
//!     // store must support exactly what `supports` lists.
//!     husk::store_conformance!(
//!         || Fresh::new(Arc::new(MyStore::open_empty()), ()),
//!         supports: [queries, incidents, pauses]
//!     );
//! }
//! ```
//!
//! `store_conformance!([ignore = "why"] backend)` puts attributes on every
//! generated test (say, to ignore them where the backend's server is
//! missing). Time is a manual clock: no check sleeps.

pub mod dispatch;
pub mod incidents;
pub mod pauses;
pub mod pruning;
pub mod queries;
pub mod queue;
pub mod shared;
pub mod versions;
pub mod wakes;

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::classify::{ErrorMapper, Rule, Rules};
use crate::clock::ManualClock;
use crate::dispatch::{Dispatcher, TopicPolicy};
use crate::fault::Fault;
use crate::outcome::{CollectingSink, Outcome, TerminalOutcome};
use crate::retry::RetryPolicySpec;
use crate::sandbox::Ending;
use crate::store::{FetchRequest, JobId, JobRecord, JobStore, LockedJob, Reported};

/// Lock duration of every fetch of the checks.
pub const LOCK: Duration = Duration::from_secs(30);

/// A fresh, empty store, and whatever must live as long as it (a
/// temporary directory, a database schema dropped when it is).
pub struct Fresh {
    store: Arc<dyn JobStore>,
    _keep: Box<dyn Any>,
}

impl Fresh {
    /// `store`, keeping `keep` alive until it is dropped.
    pub fn new(store: Arc<dyn JobStore>, keep: impl Any) -> Self {
        Self { store, _keep: Box::new(keep) }
    }

    /// The store.
    pub fn store(&self) -> &dyn JobStore {
        self.store.as_ref()
    }
}

/// A backend under test: it makes fresh, empty stores.
pub trait Backend {
    /// A fresh, empty store.
    fn fresh(&self) -> Fresh;
}

impl<F: Fn() -> Fresh> Backend for F {
    fn fresh(&self) -> Fresh {
        self()
    }
}

/// A dispatcher on a fresh store of a backend, with a manual clock and a
/// sink that collects what it is given: time moves only when a check moves
/// it.
pub struct Rig {
    /// The clock.
    pub clock: ManualClock,
    /// The sink of terminal outcomes.
    pub sink: Arc<CollectingSink>,
    /// The dispatcher.
    pub dispatcher: Arc<Dispatcher>,
    /// The stop flag fetches are given.
    pub stop: AtomicBool,
    _fresh: Fresh,
}

impl Rig {
    /// A rig on `backend` with an engine-wide default retry policy (or none).
    pub fn on(backend: &dyn Backend, default_retry: Option<RetryPolicySpec>) -> Self {
        let clock = ManualClock::new();
        let sink = Arc::new(CollectingSink::new());
        let fresh = backend.fresh();
        let dispatcher = Dispatcher::new(fresh.store.clone(), Arc::new(clock.clone()), sink.clone(), default_retry);
        Self { clock, sink, dispatcher, stop: AtomicBool::new(false), _fresh: fresh }
    }

    /// A rig on `backend` with one topic `t` using `retry` and no mapper.
    pub fn with_topic(backend: &dyn Backend, retry: RetryPolicySpec) -> Self {
        let rig = Self::on(backend, None);
        rig.dispatcher.set_topic("t", TopicPolicy { retry: Some(retry), mapper: None, ..Default::default() });
        rig
    }

    /// Enqueues a job of `topic` with input `{}`.
    pub fn enqueue(&self, topic: &str) -> JobId {
        self.dispatcher.enqueue(topic, b"{}".to_vec()).unwrap()
    }

    /// Fetches without waiting.
    pub fn fetch(&self, topic: &str, max: usize) -> Vec<LockedJob> {
        let topics = [topic.to_owned()];
        let request = FetchRequest { worker: "w", topics: &topics, max, lock_duration: LOCK };
        self.dispatcher.fetch_and_lock(request, Duration::ZERO, &self.stop, None, &mut Default::default()).unwrap()
    }

    /// Fetches exactly one job.
    pub fn fetch_one(&self, topic: &str) -> LockedJob {
        let mut jobs = self.fetch(topic, 1);
        assert_eq!(jobs.len(), 1, "expected one fetchable job");
        jobs.remove(0)
    }

    /// Reports `job` failed with fault `code`, run by version `v1`.
    pub fn fail(&self, job: &LockedJob, code: &str) -> Reported {
        self.dispatcher.report(job, Ending::Fault(Fault::new(code, "")), Some("v1")).unwrap()
    }

    /// Reports `job` completed, run by version `v1`.
    pub fn complete(&self, job: &LockedJob) -> Reported {
        self.dispatcher.report(job, Ending::Returned(b"\"done\"".to_vec()), Some("v1")).unwrap()
    }

    /// The record of job `id`.
    pub fn get(&self, id: JobId) -> JobRecord {
        self.dispatcher.store().get(id).unwrap().unwrap()
    }

    /// The outcomes delivered to the sink for `id`.
    pub fn outcomes_of(&self, id: JobId) -> Vec<TerminalOutcome> {
        self.sink.outcomes().into_iter().filter(|o| o.job_id == id).collect()
    }

    /// The one outcome delivered for `id`.
    pub fn outcome_of(&self, id: JobId) -> Outcome {
        let outcomes = self.outcomes_of(id);
        assert_eq!(outcomes.len(), 1, "expected exactly one outcome for job {id}: {outcomes:?}");
        outcomes[0].outcome.clone()
    }
}

/// A rules mapper from rule values as JSON.
pub fn rules(rules: serde_json::Value) -> ErrorMapper {
    let rules: Vec<Rule> = serde_json::from_value(rules).unwrap();
    ErrorMapper::Rules(Rules::new(rules).unwrap())
}

/// Checks that `backend`'s stores support exactly `claimed` (the names of
/// [`Supports::names`](crate::store::Supports::names)): a suite that
/// claims a capability the store lacks, or leaves out one it has, fails.
pub fn supports_what_its_suite_claims(backend: &dyn Backend, claimed: &[&str]) {
    let fresh = backend.fresh();
    assert_eq!(
        fresh.store().supports().names(),
        claimed,
        "what the store supports, against the suite's `supports: [...]`"
    );
}

/// One `#[test]` per conformance check, each running it on the backend
/// `$backend` (an expression of a type implementing
/// [`Backend`](crate::conformance::Backend), evaluated in each test):
/// the checks of the queue ([`JobStore`]) and of the dispatcher on it, then,
/// in a module per capability, the checks of each capability listed after
/// `supports:` (the store must support exactly those; each capability's
/// checks may use the ones before it in this order: queries, incidents,
/// pauses, pruning, versions, shared). Attributes in brackets before the
/// backend go on every test.
#[macro_export]
macro_rules! store_conformance {
    ([$($attrs:tt)*] $backend:expr $(, supports: [$($capability:ident),* $(,)?])?) => {
        $crate::__store_conformance_tests! {
            [$($attrs)*] ($backend)
            dispatch::raw_fault_classified_to_business_error_is_delivered_terminal,
            dispatch::raw_fault_classified_to_business_status_is_delivered_terminal,
            dispatch::permanent_faults_end_at_once_and_a_topic_list_replaces_the_default,
            dispatch::unmatched_fault_is_technical_and_retried,
            dispatch::technical_non_retryable_fails_at_once,
            dispatch::no_mapper_means_technical,
            dispatch::host_reserved_codes_go_through_the_mapper,
            dispatch::two_level_policy_is_resolved_at_enqueue_and_stored,
            dispatch::unknown_topic_is_refused_and_nothing_is_enqueued,
            dispatch::sink_sees_one_terminal_outcome_per_job_never_a_retried_attempt,
            dispatch::technical_fault_re_arms_and_is_refetched_only_after_not_before,
            wakes::a_waiting_fetch_wakes_at_the_nearest_gate,
            wakes::a_waiting_fetch_wakes_on_enqueue,
            dispatch::business_outcomes_are_never_retried,
            dispatch::a_report_after_lock_expiry_is_dropped,
            dispatch::lock_expiry_counts_as_an_attempt,
            dispatch::extending_a_lock_keeps_the_job,
            dispatch::cancelling_a_queued_and_a_gated_job_ends_it_once,
            dispatch::cancelling_a_running_job_ends_it_cancelled_whatever_it_reports,
            dispatch::a_cancel_racing_ahead_of_registration_still_reaches_the_job,
            dispatch::a_job_registering_after_a_shutdowns_interruption_is_interrupted_too,
            dispatch::status_reads_come_from_the_published_snapshot,
            dispatch::every_spent_attempt_is_recorded_with_its_plugin_version,
            dispatch::each_attempt_records_its_start_duration_and_fuel,
            dispatch::fault_bodies_with_nul_are_kept_in_the_history,
            dispatch::a_history_keeps_a_cut_of_each_fault_body,
            dispatch::a_business_outcome_is_an_attempt_without_a_fault,
            wakes::keyed_enqueue_counts_and_wakes_only_when_it_creates,
            wakes::an_async_enqueue_lands_counted_and_wakes_even_if_its_caller_stops_waiting,
            queue::outcome_log_is_ordered_and_resumable_by_cursor,
            queue::release_requeues_on_the_same_attempt_unless_a_cancel_was_asked,
            queue::an_idempotency_key_enqueues_one_job_even_after_it_ended,
            queue::distinct_keys_enqueue_distinct_jobs_and_a_repeat_in_one_call_enqueues_once,
            queue::outputs_and_fault_bodies_are_kept_byte_exact,
            queue::ready_jobs_are_fetched_by_priority_then_oldest_first,
        }
        $crate::__store_conformance_claims!([$($attrs)*] $backend, [$($($capability),*)?]);
        $crate::__store_conformance_capabilities!([$($attrs)*] ($backend) $($($capability)*)?);
    };
    ($backend:expr $(, supports: [$($capability:ident),* $(,)?])?) => {
        $crate::store_conformance!([] $backend $(, supports: [$($capability),*])?);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_claims {
    ([$($attr:meta),*] $backend:expr, [$($capability:ident),*]) => {
        #[test]
        $(#[$attr])*
        fn the_store_supports_what_its_suite_claims() {
            $crate::conformance::supports_what_its_suite_claims(&$backend, &[$(stringify!($capability)),*])
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_capabilities {
    ($attrs:tt ($backend:expr)) => {};
    ($attrs:tt ($backend:expr) $first:ident $($rest:ident)*) => {
        $crate::__store_conformance_capability!($first $attrs ($backend));
        $crate::__store_conformance_capabilities!($attrs ($backend) $($rest)*);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_capability {
    (queries $attrs:tt ($backend:expr)) => {
        $crate::__store_conformance_module!(queries $attrs ($backend)
            depths_and_listing_follow_job_states,
            listing_filters_by_outcome_enqueue_time_and_fault_code,
            a_jobs_input_is_kept_with_its_outcome_unless_it_is_dropped,
        );
    };
    (incidents $attrs:tt ($backend:expr)) => {
        $crate::__store_conformance_module!(incidents $attrs ($backend)
            exhaustion_is_a_failed_incident_with_topic_attempts_and_last_fault,
            lock_expiries_are_attempts_without_a_version_and_a_retried_incident_continues_its_history,
        );
    };
    (pauses $attrs:tt ($backend:expr)) => {
        $crate::__store_conformance_module!(pauses $attrs ($backend)
            a_paused_topic_takes_enqueues_but_is_not_fetched_until_resumed,
            a_fetch_of_a_paused_topic_sleeps_through_enqueues_until_the_resume,
        );
    };
    (pruning $attrs:tt ($backend:expr)) => {
        $crate::__store_conformance_module!(pruning $attrs ($backend) retention_keeps_the_tables_bounded_over_a_week);
    };
    (versions $attrs:tt ($backend:expr)) => {
        $crate::__store_conformance_module!(versions $attrs ($backend) plugin_versions_are_kept_made_current_and_pruned);
    };
    (shared $attrs:tt ($backend:expr)) => {
        $crate::__store_conformance_module!(shared $attrs ($backend) a_capped_enqueue_counts_live_jobs_of_the_tenants_topics);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_module {
    ($group:ident $attrs:tt ($backend:expr) $($name:ident),* $(,)?) => {
        mod $group {
            #[allow(unused_imports)]
            use super::*;
            $( $crate::__store_conformance_test!($attrs, $backend, $group, $name); )*
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_tests {
    ($attrs:tt ($backend:expr) $($group:ident :: $name:ident),* $(,)?) => {
        $( $crate::__store_conformance_test!($attrs, $backend, $group, $name); )*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_test {
    ([$($attr:meta),*], $backend:expr, $group:ident, $name:ident) => {
        #[test]
        $(#[$attr])*
        fn $name() {
            $crate::conformance::$group::$name(&$backend)
        }
    };
}
