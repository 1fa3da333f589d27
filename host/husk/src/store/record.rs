//! What the store knows of a job: its state, lock, record and the history
//! of its attempts.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::fault::Fault;
use crate::job::JobId;
use crate::outcome::TerminalOutcome;
use crate::retry::RetryPolicySpec;
use crate::store::AttemptRun;

#[cfg(doc)]
use crate::store::JobStore;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobState {
    /// Waiting for a worker.
    Queued,
    /// Waiting for its `not_before` gate (a retry backoff or a delayed start).
    Gated,
    /// Locked by a worker.
    Running,
    /// Ended (see its outcome).
    Terminal,
}

/// Which worker holds a job, until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    /// The worker.
    pub worker: String,
    /// When the lock expires.
    #[serde(with = "crate::wire::epoch_millis")]
    pub expires_at: SystemTime,
}

/// What the store knows of a job (see [`JobStore::get`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job.
    pub id: JobId,
    /// Its topic.
    pub topic: String,
    /// Where it is.
    pub state: JobState,
    /// The attempt it is on (1-based; the attempts made, once terminal).
    pub attempt: u32,
    /// Its retry policy.
    pub policy: RetryPolicySpec,
    /// When it was enqueued.
    #[serde(with = "crate::wire::epoch_millis")]
    pub enqueued_at: SystemTime,
    /// Its gate, when gated.
    #[serde(default, with = "optional_millis")]
    pub not_before: Option<SystemTime>,
    /// Its lock, when running.
    pub lock: Option<LockInfo>,
    /// The fault of its last failed attempt.
    pub last_fault: Option<Fault>,
    /// Whether its owner asked to cancel it while it ran.
    pub cancel_requested: bool,
    /// Its terminal outcome, once ended.
    pub outcome: Option<TerminalOutcome>,
    /// Whether it failed and its incident was discarded: it ends so for
    /// good, never retried.
    #[serde(default)]
    pub discarded: bool,
    /// Its finished attempts, oldest first, across retried incidents.
    /// Filled by [`JobStore::get`]; [`Queries::list`](crate::store::Queries::list) and
    /// [`Incidents::open_incidents`](crate::store::Incidents::open_incidents) leave it empty.
    #[serde(default)]
    pub attempts: Vec<AttemptRecord>,
    /// Its priority within its topic ([`NewJob::priority`](crate::store::NewJob::priority)).
    #[serde(default)]
    pub priority: i16,
}

/// One finished attempt of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// Which attempt (1-based).
    pub attempt: u32,
    /// The plugin version (digest) that ran it, if known.
    pub plugin_version: Option<String>,
    /// Its fault, the body cut at [`HISTORY_FAULT_BODY`] bytes; `None` when
    /// it returned output, or its fault was classified a business error or
    /// status (the outcome says which).
    pub fault: Option<Fault>,
    /// When it was reported, or, for a lock that expired, when the expiry
    /// was reclaimed.
    #[serde(with = "crate::wire::epoch_millis")]
    pub finished_at: SystemTime,
    /// When the run started, if known (not for a lock that expired).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "optional_millis")]
    pub started_at: Option<SystemTime>,
    /// How long the guest ran, in microseconds, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_us: Option<u64>,
    /// Fuel the run consumed, when fuel is metered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
}

mod optional_millis {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::wire::epoch_millis::{from_millis, to_millis};

    pub(super) fn serialize<S: Serializer>(time: &Option<SystemTime>, serializer: S) -> Result<S::Ok, S::Error> {
        time.map(to_millis).serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<SystemTime>, D::Error> {
        Ok(Option::<u64>::deserialize(deserializer)?.map(from_millis))
    }
}

/// The record of attempt `attempt` of a job whose lock expired: reclaimed
/// at `now` with `fault` (`husk.lock-expired`); the version is unknown.
pub(super) fn expired_attempt(attempt: u32, fault: &Fault, now: SystemTime) -> AttemptRecord {
    AttemptRecord::new(attempt, &AttemptRun::default(), Some(fault), now)
}

/// The most of a fault's body an [`AttemptRecord`] keeps: a history holds
/// one fault per attempt, and a guest's fault body may be as large as its
/// output (1 MiB by default). The job's `last_fault` keeps its last fault
/// whole.
pub const HISTORY_FAULT_BODY: usize = 4 << 10;

impl AttemptRecord {
    /// The record of attempt `attempt`, the run `run`, finished at
    /// `finished_at`, its fault body cut at [`HISTORY_FAULT_BODY`] bytes.
    pub(super) fn new(attempt: u32, run: &AttemptRun, fault: Option<&Fault>, finished_at: SystemTime) -> Self {
        let fault = fault
            .map(|f| Fault { code: f.code.clone(), body: f.body[..f.body.len().min(HISTORY_FAULT_BODY)].to_vec() });
        Self {
            attempt,
            plugin_version: run.plugin_version.clone(),
            fault,
            finished_at,
            started_at: run.started_at,
            duration_us: run.duration.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
            fuel: run.fuel,
        }
    }
}
