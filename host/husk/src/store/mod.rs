//! Job stores: where jobs, their gates and locks, and terminal outcomes
//! live. [`JobStore`] is the queue every store is; what a store offers
//! beyond it is a trait of [`supports`] it opts into. [`MemoryStore`] is the
//! in-process implementation (the SQL stores implement the same semantics,
//! as the conformance suite checks).
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
//! kept as long as its job, beyond the job's end: [`Pruning::prune`]
//! forgets both once the job's retention has passed.

mod error;
mod memory;
mod record;
mod retention;
pub mod sql;
pub mod supports;

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

pub use error::{Cause, StoreError};
pub use memory::{DEFAULT_RETAINED_OUTCOMES, MemoryStore};
use record::expired_attempt;
pub use record::{AttemptRecord, HISTORY_FAULT_BODY, JobRecord, JobState, LockInfo};
pub use retention::{DiscardResult, Pruned, Retention};
pub use supports::{
    Capped, Incidents, ListFilter, Pauses, PermitLease, Pruning, Queries, QueueCap, RetryIncidentResult, Shared,
    StoreEvents, StoredVersion, TopicVersion, VersionToKeep, Versions,
};

use crate::fault::Fault;
pub use crate::job::JobId;
use crate::outcome::{Outcome, TerminalOutcome};
use crate::retry::RetryPolicySpec;

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
    /// [`Pruning::prune`]). `None`: no key, always enqueued.
    pub key: Option<String>,
    /// Whether the input is kept with the job's outcome after it ends
    /// (until the outcome is pruned); `false` drops it when the job ends,
    /// unless it ends an open incident, which keeps it until retried or
    /// discarded.
    pub keep_input: bool,
    /// Its priority within its topic: of the jobs ready to run, those of
    /// the highest priority are fetched first, each priority's oldest
    /// first (see [`PRIORITIES`]; default 0).
    pub priority: i16,
}

/// The priorities a job may have: -100 (last) to 100 (first).
pub const PRIORITIES: std::ops::RangeInclusive<i16> = -100..=100;

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
    /// The job's priority within its topic: a fetch returns its jobs the
    /// highest priority first, then the oldest.
    pub priority: i16,
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
    /// Whether every topic asked for is paused ([`Pauses::set_paused`]):
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

/// What [`JobStore::enqueue_then`] hands an enqueue's result to.
pub type EnqueueDone = Box<dyn FnOnce(Result<Vec<Enqueued>, StoreError>) + Send>;

/// How a store runs its calls, for the dispatcher to fit its own work to
/// them. The default, every field `false`, describes a store whose every
/// call is a transaction of its own, run on the caller's thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Behaviour {
    /// The store itself runs concurrent calls in one transaction and
    /// commit (SQLite's connection thread does): the dispatcher then hands
    /// each enqueue to it as it comes, rather than having concurrent
    /// enqueues wait for one another to make one call together, which
    /// there only adds the waits.
    pub commits_in_groups: bool,
    /// [`JobStore::enqueue_then`] returns without waiting and calls its
    /// `done` from the store's own thread once the jobs are committed, so
    /// an async caller need not hold a thread while it waits.
    pub enqueues_in_background: bool,
    /// A commit waits for a flush that costs the same for one row or a
    /// thousand (PostgreSQL): workers then hand their reports to the
    /// dispatcher's completer, which makes one store call of every
    /// worker's reports while the workers run their next batches.
    pub commits_wait_for_a_flush: bool,
}

/// Where jobs live: the queue every store is. All methods take `now` from
/// the dispatcher's clock, so the store never reads time itself.
/// Implementations must be safe to call from many threads.
///
/// This is the whole of what the dispatcher needs to run jobs — enqueue,
/// fetch and lock, report, lock expiry (inside the fetch), cancel, read a
/// job and the outcome log. What more a store offers (listing, incidents,
/// pauses, retention, kept plugin versions, sharing by several processes)
/// is a trait of its own in [`supports`], which the store names in
/// [`JobStore::supports`]; the host does without what a store lacks and
/// says so where it is asked for ([`StoreError::Unsupported`]).
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
    /// A store that supports [`Pauses`] fetches nothing of a paused topic.
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

    /// One job, live or ended, with its finished attempts
    /// ([`JobRecord::attempts`]).
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn get(&self, id: JobId) -> Result<Option<JobRecord>, StoreError>;

    /// Terminal outcomes with `seq > after`, in order, at most `limit`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn outcomes_after(&self, after: u64, limit: usize) -> Result<Vec<TerminalOutcome>, StoreError>;

    /// The largest `seq` of the outcomes kept that
    /// [`outcomes_after`](Self::outcomes_after) can return now (0 when there
    /// are none): a cursor past it was never handed out.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn outcome_head(&self) -> Result<u64, StoreError>;

    /// Live job counts per topic.
    ///
    /// # Errors
    ///
    /// [`StoreError`] when the store fails.
    fn depths(&self) -> Result<Vec<(String, Depth)>, StoreError>;

    /// How the store runs its calls; by default each is a transaction of
    /// its own on the caller's thread.
    fn behaviour(&self) -> Behaviour {
        Behaviour::default()
    }

    /// Starts [`JobStore::enqueue`] and hands its result to `done`. By
    /// default it enqueues here, then calls `done`; a store whose
    /// [`Behaviour::enqueues_in_background`] returns at once instead.
    fn enqueue_then(&self, jobs: Vec<NewJob>, now: SystemTime, done: EnqueueDone) {
        done(self.enqueue(jobs, now));
    }

    /// What the store supports beyond the queue: by default nothing.
    fn supports(&self) -> Supports<'_> {
        Supports::default()
    }
}

/// What a store supports beyond the queue ([`JobStore::supports`]): each
/// field the store itself, as the trait it implements, or `None`.
#[derive(Clone, Copy, Default)]
pub struct Supports<'a> {
    /// Listing jobs and reading their inputs.
    pub queries: Option<&'a dyn Queries>,
    /// Listing, retrying and discarding incidents.
    pub incidents: Option<&'a dyn Incidents>,
    /// Pausing topics for every process sharing the store.
    pub pauses: Option<&'a dyn Pauses>,
    /// Pruning ended jobs past their retention.
    pub pruning: Option<&'a dyn Pruning>,
    /// Keeping plugin versions across restarts and processes.
    pub versions: Option<&'a dyn Versions>,
    /// Being shared by several processes.
    pub shared: Option<&'a dyn Shared>,
}

impl<'a> Supports<'a> {
    /// Everything but sharing: what a store one process uses offers.
    pub fn all_but_sharing<S: Queries + Incidents + Pauses + Pruning + Versions>(store: &'a S) -> Self {
        Self {
            queries: Some(store),
            incidents: Some(store),
            pauses: Some(store),
            pruning: Some(store),
            versions: Some(store),
            shared: None,
        }
    }

    /// The names of what is supported, in field order.
    pub fn names(&self) -> Vec<&'static str> {
        let fields = [
            ("queries", self.queries.is_some()),
            ("incidents", self.incidents.is_some()),
            ("pauses", self.pauses.is_some()),
            ("pruning", self.pruning.is_some()),
            ("versions", self.versions.is_some()),
            ("shared", self.shared.is_some()),
        ];
        fields.into_iter().filter(|(_, on)| *on).map(|(name, _)| name).collect()
    }
}

impl std::fmt::Debug for Supports<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// The capabilities of a store behind `dyn JobStore`, each as a result: a
/// missing one is [`StoreError::Unsupported`], naming it.
impl dyn JobStore {
    /// Listing jobs and reading their inputs.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsupported`] when the store has none.
    pub fn queries(&self) -> Result<&dyn Queries, StoreError> {
        self.supports().queries.ok_or(StoreError::Unsupported { capability: "queries" })
    }

    /// Incidents: listing, retrying and discarding them.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsupported`] when the store has none.
    pub fn incidents(&self) -> Result<&dyn Incidents, StoreError> {
        self.supports().incidents.ok_or(StoreError::Unsupported { capability: "incidents" })
    }

    /// Pausing topics.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsupported`] when the store has none.
    pub fn pauses(&self) -> Result<&dyn Pauses, StoreError> {
        self.supports().pauses.ok_or(StoreError::Unsupported { capability: "pauses" })
    }

    /// Pruning ended jobs.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsupported`] when the store has none.
    pub fn pruning(&self) -> Result<&dyn Pruning, StoreError> {
        self.supports().pruning.ok_or(StoreError::Unsupported { capability: "pruning" })
    }

    /// Kept plugin versions.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsupported`] when the store has none.
    pub fn versions(&self) -> Result<&dyn Versions, StoreError> {
        self.supports().versions.ok_or(StoreError::Unsupported { capability: "versions" })
    }

    /// Sharing by several processes.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsupported`] when the store is one process's.
    pub fn shared(&self) -> Result<&dyn Shared, StoreError> {
        self.supports().shared.ok_or(StoreError::Unsupported { capability: "shared" })
    }

    /// Whether several processes may share this store ([`Shared`]).
    pub fn is_shared(&self) -> bool {
        self.supports().shared.is_some()
    }
}
