//! Job stores: where jobs, their gates and locks, and terminal outcomes
//! live. [`JobStore`] is the one contract; `memory` is the in-process
//! implementation (durable backends implement the same semantics).
//!
//! The store decides nothing about classification: the dispatcher
//! classifies outside the store and reports a decision ([`Report`]); the
//! store re-validates the reporter's lock before applying it. The one
//! decision the store makes itself is lock expiry: a job whose lock expired
//! is reclaimed as a failed attempt (fault `husk.lock-expired`, technical),
//! re-armed by its retry policy or, when that is exhausted, ended `Failed`.
//!
//! Every spent attempt is recorded in the job's history ([`AttemptRecord`]:
//! the plugin version that ran it and its fault), kept when the job ends
//! and across retried incidents. An idempotency key ([`NewJob::key`]) is
//! kept as long as its job, beyond the job's end: [`JobStore::prune`]
//! forgets both once the job's retention has passed.

#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
mod memory;
mod record;
mod retention;
pub mod sql;

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub use error::StoreError;
pub use memory::{DEFAULT_RETAINED_OUTCOMES, MemoryStore};
use record::expired_attempt;
pub use record::{AttemptRecord, HISTORY_FAULT_BODY, JobRecord, JobState, LockInfo};
pub use retention::{DiscardResult, Pruned, Retention};

use crate::fault::Fault;
pub use crate::job::JobId;
use crate::outcome::{Outcome, OutcomeKind, TerminalOutcome};
use crate::retry::RetryPolicySpec;
use crate::versions::Stamp;

/// A job to enqueue, with its retry policy already resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    /// The topic.
    pub topic: String,
    /// The input bytes (by convention JSON).
    pub input: Vec<u8>,
    /// The resolved retry policy, kept with the job.
    pub policy: RetryPolicySpec,
    /// Do not run before this time; `None` for as soon as possible.
    pub not_before: Option<SystemTime>,
    /// An idempotency key, unique across the store: a second enqueue with
    /// the same key enqueues nothing and returns the first job's id, whether
    /// that job is live or ended (until the ended job is pruned, see
    /// [`JobStore::prune`]). `None`: no key, always enqueued.
    pub key: Option<String>,
}

/// A tenant's `max_queued`, as [`JobStore::enqueue_capped`] checks it.
#[derive(Debug, Clone, Copy)]
pub struct QueueCap<'a> {
    /// The tenant (enqueues of one tenant are serialized).
    pub tenant: &'a str,
    /// The tenant's topics, whose live jobs count.
    pub topics: &'a [String],
    /// The most live jobs the tenant may have.
    pub max: u64,
}

/// What [`JobStore::enqueue_capped`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capped {
    /// The jobs were enqueued (or their keys' jobs returned), one
    /// [`Enqueued`] per job, in order.
    Enqueued(Vec<Enqueued>),
    /// The jobs would take the tenant past its limit: nothing was
    /// enqueued.
    Full {
        /// The tenant's live jobs, counted.
        live: u64,
    },
}

/// What [`JobStore::enqueue`] did with one [`NewJob`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Enqueued {
    /// The job: the new one, or the one that already had the key.
    pub id: JobId,
    /// Whether a job was enqueued; `false` when its key already existed
    /// (in the store, or earlier in the same call).
    pub created: bool,
}

/// Proof of holding a job's lock: the job and the token of the fetch that
/// locked it. A report is applied only while the same lock is held and
/// unexpired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lock {
    /// The job.
    pub job: JobId,
    /// Unique per fetch.
    pub token: u64,
}

/// A job handed to a worker by [`JobStore::fetch_and_lock`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedJob {
    /// The lock to report with.
    pub lock: Lock,
    /// The topic.
    pub topic: String,
    /// The input.
    pub input: Vec<u8>,
    /// The attempt this run is (1-based).
    pub attempt: u32,
    /// The job's retry policy.
    pub policy: RetryPolicySpec,
    /// When the job was enqueued.
    pub enqueued_at: SystemTime,
    /// When the lock expires.
    pub lock_expires_at: SystemTime,
}

impl LockedJob {
    /// The job's id.
    pub fn id(&self) -> JobId {
        self.lock.job
    }
}

/// A fetch: which worker wants how many jobs of which topics, for how long.
#[derive(Debug, Clone, Copy)]
pub struct FetchRequest<'a> {
    /// The worker (for the lock's owner).
    pub worker: &'a str,
    /// Topics to take jobs from.
    pub topics: &'a [String],
    /// Most jobs to lock.
    pub max: usize,
    /// How long the locks last.
    pub lock_duration: Duration,
}

/// What a fetch returned.
#[derive(Debug, Default)]
pub struct Fetched {
    /// Jobs now locked by the worker.
    pub jobs: Vec<LockedJob>,
    /// Jobs whose lock expired with their retry policy exhausted: ended
    /// `Failed` by this fetch. The caller delivers them.
    pub ended: Vec<TerminalOutcome>,
    /// The nearest future time a job of any topic becomes fetchable (a gate
    /// opens or a lock expires): when to wake without a notification.
    pub next_wake: Option<SystemTime>,
    /// Whether every topic asked for is paused ([`JobStore::set_paused`]):
    /// the fetch claimed nothing for that reason, and new jobs will not
    /// change it, only a resume. A store may say `false` where it does not
    /// know (the caller then waits as after any empty fetch).
    pub paused: bool,
}

/// What the host saw of the run an attempt was, for the job's attempt
/// history: each part `None` where it is unknown (a native handler's run,
/// a report made by hand).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttemptRun {
    /// The plugin version (digest) that ran the attempt.
    pub plugin_version: Option<String>,
    /// When the run started.
    pub started_at: Option<SystemTime>,
    /// How long it ran.
    pub duration: Option<Duration>,
    /// Fuel it consumed, when fuel is metered.
    pub fuel: Option<u64>,
}

/// A worker's decision about the job it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The operation returned `output`.
    Completed {
        /// The output.
        output: Vec<u8>,
        /// The run that returned it.
        run: AttemptRun,
    },
    /// A technical fault to retry: re-arm the job for attempt + 1 at
    /// `not_before`.
    ReArm {
        /// The fault of this attempt.
        fault: Fault,
        /// When the next attempt may run.
        not_before: SystemTime,
        /// The run that failed.
        run: AttemptRun,
    },
    /// Any other terminal outcome (business error or status, `Failed`,
    /// `Cancelled`).
    End {
        /// The outcome.
        outcome: Outcome,
        /// The run that ended it.
        run: AttemptRun,
    },
    /// Give the job back unrun (a graceful shutdown): it is queued again on
    /// the same attempt, which is not spent. A job whose owner asked to
    /// cancel it ends `Cancelled` instead.
    Release,
}

impl Report {
    /// The record of the attempt this report spends, as attempt `attempt`
    /// reported at `now`; `None` for a release, which spends none. (Also
    /// recorded when a cancel overrides the report: the attempt ran.)
    pub fn attempt_record(&self, attempt: u32, now: SystemTime) -> Option<AttemptRecord> {
        let (run, fault) = match self {
            Report::Completed { run, .. } => (run, None),
            Report::ReArm { fault, run, .. } => (run, Some(fault)),
            Report::End { outcome, run } => match outcome {
                Outcome::Failed { last_fault, .. } => (run, Some(last_fault)),
                _ => (run, None),
            },
            Report::Release => return None,
        };
        Some(AttemptRecord::new(attempt, run, fault, now))
    }
}

/// The result of a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reported {
    /// The job ended; deliver this outcome. When the owner asked to cancel
    /// the job while it ran, this is `Cancelled`, whatever was reported.
    Ended(Box<TerminalOutcome>),
    /// The job was re-armed.
    ReArmed,
    /// The job was released unrun (see [`Report::Release`]).
    Released,
    /// The reporter no longer holds the lock (it expired, or the job was
    /// reclaimed): the report was dropped.
    LockLost,
}

/// The result of [`JobStore::cancel`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelResult {
    /// The job was queued or gated: it ended `Cancelled` now.
    Cancelled(Box<TerminalOutcome>),
    /// The job is running: it will end `Cancelled` when its worker reports.
    Cancelling,
    /// The job had already ended.
    AlreadyEnded,
    /// No such job.
    NotFound,
}

/// The result of [`JobStore::retry_incident`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryIncidentResult {
    /// The job is queued again with a fresh attempt budget.
    Requeued,
    /// The job is not an open incident (never was, or already retried).
    NotAnIncident,
    /// No such job.
    NotFound,
}

/// Filter for [`JobStore::list`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only jobs of this topic.
    pub topic: Option<String>,
    /// Only jobs in this state.
    pub state: Option<JobState>,
    /// At most this many, newest first (default 100).
    pub limit: Option<usize>,
    /// Only jobs older than this one (ids below it): the next page after a
    /// page that ended with it.
    pub before: Option<JobId>,
    /// Only ended jobs whose (latest) outcome is of this kind.
    pub outcome: Option<OutcomeKind>,
    /// Only jobs enqueued at or after this time.
    pub enqueued_after: Option<SystemTime>,
    /// Only jobs enqueued before this time.
    pub enqueued_before: Option<SystemTime>,
    /// Only jobs whose last fault's code contains this text (case
    /// sensitive); jobs without a fault never match.
    pub fault_code: Option<String>,
}

impl ListFilter {
    /// Whether `record` passes every condition of the filter but `limit`
    /// and `before` (how the memory store filters; the SQL stores say the
    /// same in their queries).
    pub fn matches(&self, record: &JobRecord) -> bool {
        let millis = crate::fault::epoch_millis::to_millis;
        self.topic.as_ref().is_none_or(|t| &record.topic == t)
            && self.state.is_none_or(|s| record.state == s)
            && self.outcome.is_none_or(|k| record.outcome.as_ref().is_some_and(|o| o.outcome.outcome_kind() == k))
            && self.enqueued_after.is_none_or(|t| millis(record.enqueued_at) >= millis(t))
            && self.enqueued_before.is_none_or(|t| millis(record.enqueued_at) < millis(t))
            && self
                .fault_code
                .as_ref()
                .is_none_or(|text| record.last_fault.as_ref().is_some_and(|f| f.code.contains(text.as_str())))
    }

    /// Whether only ended jobs can match (an outcome is asked for, or the
    /// terminal state).
    pub fn ended_only(&self) -> bool {
        self.outcome.is_some() || self.state == Some(JobState::Terminal)
    }
}

/// Counts of a topic's live jobs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Depth {
    /// Queued, ready to run.
    pub queued: u64,
    /// Waiting for a gate.
    pub gated: u64,
    /// Running.
    pub running: u64,
}

impl Depth {
    /// Live jobs: queued, gated and running.
    pub fn live(&self) -> u64 {
        self.queued + self.gated + self.running
    }
}

/// A plugin version the store keeps (see [`JobStore::put_version`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVersion {
    /// The component's SHA-256 (hex): the version's identity.
    pub digest: String,
    /// How, by whom and when it last became current.
    pub stamp: Stamp,
}

/// Which version of a topic is current, for every process sharing the
/// store (see [`JobStore::current_versions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicVersion {
    /// The topic.
    pub topic: String,
    /// The digest of its current version.
    pub current: String,
    /// The digest of the config file's component when a process last
    /// recorded it: a config file that changed since is deployed at start,
    /// one that did not leaves the current version alone.
    pub config: Option<String>,
}

/// What a store shared by several processes tells the dispatcher of this
/// one (PostgreSQL's `LISTEN/NOTIFY`). Implemented by the dispatcher.
pub trait StoreEvents: Send + Sync {
    /// Jobs may have become fetchable (another process enqueued or
    /// re-armed): waiting fetchers should look again.
    fn jobs_available(&self);
    /// Another process made `jobs` jobs of `topic` fetchable: wake that
    /// many of its waiting fetchers. By default, as [`jobs_available`].
    ///
    /// [`jobs_available`]: StoreEvents::jobs_available
    fn topic_jobs_available(&self, topic: &str, jobs: u64) {
        let _ = (topic, jobs);
        self.jobs_available();
    }
    /// How many fetchers of `topic` sleep in this process now, waiting for
    /// jobs: a store shared by processes need not wake other processes'
    /// fetchers for new jobs these will take. By default none.
    fn waiting_fetchers(&self, topic: &str) -> u64 {
        let _ = topic;
        0
    }
    /// Another process asked to cancel job `id`: interrupt it if it runs
    /// here.
    fn cancel_requested(&self, id: JobId);
}

/// What [`JobStore::enqueue_then`] hands an enqueue's result to.
pub type EnqueueDone = Box<dyn FnOnce(Result<Vec<Enqueued>, StoreError>) + Send>;

/// Where jobs live. All methods take `now` from the dispatcher's clock, so
/// the store never reads time itself. Implementations must be safe to call
/// from many threads.
pub trait JobStore: Send + Sync + 'static {
    /// Adds jobs; returns what became of each, in order. A job whose
    /// [`NewJob::key`] is already in the store (or earlier in `jobs`) is not
    /// added: its entry names the job that has the key, `created: false`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails; nothing is enqueued then.
    fn enqueue(&self, jobs: Vec<NewJob>, now: SystemTime) -> Result<Vec<Enqueued>, StoreError>;

    /// Locks up to `request.max` fetchable jobs of `request.topics`: queued
    /// jobs, gated jobs whose gate has passed, and running jobs whose lock
    /// expired (reclaimed as a failed attempt first, see the module docs).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn fetch_and_lock(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError>;

    /// Applies reports, each only if its lock is still held and unexpired.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn report(&self, reports: Vec<(Lock, Report)>, now: SystemTime) -> Result<Vec<Reported>, StoreError>;

    /// Extends a held lock to `until`; `false` if the lock is lost.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn extend_lock(&self, lock: Lock, until: SystemTime, now: SystemTime) -> Result<bool, StoreError>;

    /// Cancels a job (see [`CancelResult`]).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn cancel(&self, id: JobId, now: SystemTime) -> Result<CancelResult, StoreError>;

    /// Re-queues a `Failed` job (an incident) with a fresh attempt budget.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn retry_incident(&self, id: JobId, now: SystemTime) -> Result<RetryIncidentResult, StoreError>;

    /// One job, live or ended, with its finished attempts
    /// ([`JobRecord::attempts`]).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn get(&self, id: JobId) -> Result<Option<JobRecord>, StoreError>;

    /// Jobs matching `filter`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn list(&self, filter: &ListFilter) -> Result<Vec<JobRecord>, StoreError>;

    /// Open incidents: jobs that ended `Failed` and were not retried.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn incidents(&self) -> Result<Vec<JobRecord>, StoreError>;

    /// The input of job `id` while the store keeps it: while the job is
    /// live, and while it is an open incident (kept for its retry); `None`
    /// once it ended otherwise, or for a store that keeps no inputs (the
    /// default).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn input(&self, id: JobId) -> Result<Option<Vec<u8>>, StoreError> {
        let _ = id;
        Ok(None)
    }

    /// Terminal outcomes with `seq > after`, in order, at most `limit`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn outcomes_after(&self, after: u64, limit: usize) -> Result<Vec<TerminalOutcome>, StoreError>;

    /// Live job counts per topic.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn depths(&self) -> Result<Vec<(String, Depth)>, StoreError>;

    /// Pauses (`paused: true`) or resumes fetching of `topic`, for every
    /// process sharing the store: a paused topic's jobs are not fetched
    /// (enqueues still land, running jobs finish, expired locks are still
    /// reclaimed); a resume wakes waiting fetchers. Returns whether the
    /// topic's state changed. Stores without pauses refuse
    /// ([`StoreError::Failed`]).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails or has no pauses.
    fn set_paused(&self, topic: &str, paused: bool) -> Result<bool, StoreError> {
        let _ = (topic, paused);
        Err(StoreError::Failed { store: "this store".into(), message: "pausing topics is not supported".into() })
    }

    /// The paused topics, sorted.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn paused(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }

    /// Deletes, at most `batch` at a time, the outcomes (with their
    /// histories, and the idempotency keys of their jobs) that ended longer
    /// ago than `retention` keeps them, as of `now`. Open incidents are
    /// never pruned. Call it again while it prunes a whole batch. A store
    /// that prunes nothing (this default) grows without bound.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn prune(&self, retention: &Retention, now: SystemTime, batch: usize) -> Result<Pruned, StoreError> {
        let _ = (retention, now, batch);
        Ok(Pruned::default())
    }

    /// The highest outcome sequence number pruned so far (0: none): a
    /// reader of the outcome log whose cursor is below it may have missed
    /// outcomes, and must start again from it.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn pruned_through(&self) -> Result<u64, StoreError> {
        Ok(0)
    }

    /// Closes an open incident without retrying it (see [`DiscardResult`]).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails or cannot discard.
    fn discard_incident(&self, id: JobId) -> Result<DiscardResult, StoreError> {
        let _ = id;
        Err(StoreError::Failed { store: "this store".into(), message: "discarding incidents is not supported".into() })
    }

    /// Whether several processes may share this store: then a tenant's
    /// concurrency permits are leased from it ([`JobStore::acquire_permits`])
    /// and its `max_queued` is checked in it ([`JobStore::enqueue_capped`]).
    fn is_shared(&self) -> bool {
        false
    }

    /// Whether the store itself runs concurrent calls in one transaction
    /// and commit (SQLite's connection thread does): then the dispatcher
    /// hands each enqueue to it as it comes, rather than having concurrent
    /// enqueues wait for one another to make one call together, which here
    /// only adds the waits. `false`: each call is a transaction of its own.
    fn commits_in_groups(&self) -> bool {
        false
    }

    /// Starts [`JobStore::enqueue`] and hands its result to `done`. A store
    /// that runs its calls on a thread of its own
    /// ([`JobStore::enqueues_in_background`]) returns at once and calls
    /// `done` from that thread once the jobs are committed, so an async
    /// caller need not hold a thread of its own while it waits. The
    /// default enqueues here, then calls `done`.
    fn enqueue_then(&self, jobs: Vec<NewJob>, now: SystemTime, done: EnqueueDone) {
        done(self.enqueue(jobs, now));
    }

    /// Whether [`JobStore::enqueue_then`] returns without waiting for the
    /// store (SQLite's connection thread runs it). `false`: it blocks its
    /// caller, as [`JobStore::enqueue`] does.
    fn enqueues_in_background(&self) -> bool {
        false
    }

    /// Whether workers should hand their reports to the dispatcher's
    /// completer, which makes one store call of every worker's reports
    /// while the workers run their next batches: worth it where a commit
    /// waits for a flush that costs the same for one row or a thousand
    /// (PostgreSQL). `false`: each worker reports on its own thread.
    fn completes_in_background(&self) -> bool {
        false
    }

    /// Leases up to `want` more of `tenant`'s `limit` concurrency permits
    /// to `holder` (one process), which holds `held` now: counts the
    /// unexpired leases of the other holders sharing the store, in one step
    /// no other holder interleaves with, and records the holder's lease as
    /// `held` + what it leased, until `until`. Returns how many it leased.
    /// A store only one process uses (this default) leases all: that
    /// process's own gate is the limit.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails; nothing is leased then.
    #[allow(clippy::too_many_arguments, reason = "one lease request, each argument named in the docs")]
    fn acquire_permits(
        &self,
        tenant: &str,
        holder: &str,
        held: usize,
        want: usize,
        limit: usize,
        until: SystemTime,
        now: SystemTime,
    ) -> Result<usize, StoreError> {
        let _ = (tenant, holder, held, limit, until, now);
        Ok(want)
    }

    /// Records that `holder` now holds `held` of `tenant`'s permits (it
    /// gave some back), its lease lasting until `until`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails (the holder's next lease write
    /// records its count, or the lease expires).
    fn release_permits(&self, tenant: &str, holder: &str, held: usize, until: SystemTime) -> Result<(), StoreError> {
        let _ = (tenant, holder, held, until);
        Ok(())
    }

    /// Permits of `tenant` leased now, by every holder (unexpired leases).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn permits_leased(&self, tenant: &str, now: SystemTime) -> Result<usize, StoreError> {
        let _ = (tenant, now);
        Ok(0)
    }

    /// Enqueues `jobs` (all or none) only when `cap.topics` hold at most
    /// `cap.max` live jobs (queued, gated or running) with them, counted in
    /// the same step as the insert, which no other capped enqueue of
    /// `cap.tenant` interleaves with — in any process sharing the store.
    /// Every job counts, even one whose key names an existing job (the
    /// safe side: a batch is never admitted past the limit). This default
    /// counts with
    /// [`JobStore::depths`] and then enqueues: exact for a store only one
    /// process uses, when the caller serializes a tenant's enqueues (as
    /// [`crate::Host`] does).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails; nothing is enqueued then.
    fn enqueue_capped(&self, jobs: Vec<NewJob>, cap: &QueueCap<'_>, now: SystemTime) -> Result<Capped, StoreError> {
        let live: u64 = self.depths()?.iter().filter(|(t, _)| cap.topics.contains(t)).map(|(_, d)| d.live()).sum();
        if live + jobs.len() as u64 > cap.max {
            return Ok(Capped::Full { live });
        }
        Ok(Capped::Enqueued(self.enqueue(jobs, now)?))
    }

    /// Keeps `version` of `topic` (its component is `component`) and makes
    /// it the topic's current version, in one transaction; `config`: it is
    /// the config file's component (remembered, see [`TopicVersion`]).
    /// Keeps at most `keep` versions of the topic (the current one always),
    /// dropping the components of those that were current longest ago.
    ///
    /// Versions kept here outlive a restart and are shared by every process
    /// sharing the store. A store that keeps none (this default) keeps
    /// nothing: deployed versions then last until the process ends.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails; nothing changed then.
    fn put_version(
        &self,
        topic: &str,
        version: &StoredVersion,
        component: &[u8],
        config: bool,
        keep: usize,
    ) -> Result<(), StoreError> {
        let _ = (topic, version, component, config, keep);
        Ok(())
    }

    /// Makes the kept version `version.digest` of `topic` current again (a
    /// rollback), stamped with `version.stamp`; `false` when it is not kept.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn set_current_version(&self, topic: &str, version: &StoredVersion) -> Result<bool, StoreError> {
        let _ = (topic, version);
        Ok(false)
    }

    /// Every topic's current version.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn current_versions(&self) -> Result<Vec<TopicVersion>, StoreError> {
        Ok(Vec::new())
    }

    /// The kept versions of `topic`, the current one first, then the others
    /// by when they were last current, most recent first.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn kept_versions(&self, topic: &str) -> Result<Vec<StoredVersion>, StoreError> {
        let _ = topic;
        Ok(Vec::new())
    }

    /// The component of the kept version `digest` of `topic`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn version_component(&self, topic: &str, digest: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let _ = (topic, digest);
        Ok(None)
    }

    /// Registers the receiver of events from other processes sharing this
    /// store. Stores only one process uses ignore it.
    fn subscribe(&self, events: std::sync::Weak<dyn StoreEvents>) {
        let _ = events;
    }
}
