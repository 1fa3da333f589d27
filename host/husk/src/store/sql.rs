//! What the SQL stores (`husk-sqlite`, `husk-postgres`) share, for any SQL
//! backend: the schema version, the columns of a live job, how a lock is
//! checked, what an expired lock becomes, and how rows turn into records.
//! Each backend only reads and writes the rows.
//!
//! A job's history (its [`AttemptRecord`]s) is a JSON array column on its
//! row, appended to in SQL by the statement that re-arms or ends the job
//! (no read-modify-write), and copied to its outcome row when it ends.

use std::time::SystemTime;

use super::{AttemptRecord, JobId, JobRecord, JobState, Lock, LockInfo, expired_attempt};

/// The version of the SQL schema this husk writes (SQLite's `PRAGMA
/// user_version`, PostgreSQL's `husk_meta.schema_version`); a store written
/// by a newer husk (a higher version) is refused.
pub const SCHEMA_VERSION: i64 = 8;
use crate::fault::{Fault, codes};
use crate::outcome::{Outcome, TerminalOutcome};
use crate::retry::{RetryPolicy, RetryPolicySpec};
use crate::wire::epoch_millis::{from_millis, to_millis};

/// `state` of a queued job.
pub const QUEUED: i64 = 0;
/// `state` of a gated job.
pub const GATED: i64 = 1;
/// `state` of a running (locked) job.
pub const RUNNING: i64 = 2;

/// The JSON text of a stored value (policies, faults, outcomes).
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("store values serialize")
}

/// A stored history (a JSON array of attempts).
pub fn history_of(json: &str) -> Result<Vec<AttemptRecord>, serde_json::Error> {
    serde_json::from_str(json)
}

/// The stored policy (JSON) of a retried incident whose job made `made`
/// attempts (see [`RetryPolicySpec::continued`](crate::retry::RetryPolicySpec::continued)).
pub fn continued_policy(json: &str, made: i64) -> Result<String, serde_json::Error> {
    let policy: crate::retry::RetryPolicySpec = serde_json::from_str(json)?;
    Ok(to_json(&policy.continued(made.clamp(0, u32::MAX as i64) as u32)))
}

/// Milliseconds since the epoch, as stored.
pub fn millis(time: SystemTime) -> i64 {
    to_millis(time) as i64
}

/// A stored time.
pub fn time(ms: i64) -> SystemTime {
    from_millis(ms.max(0) as u64)
}

/// The state column of a job armed at `now` with an optional gate, and the
/// gate to store.
pub fn armed_state(gate: Option<SystemTime>, now: SystemTime) -> (i64, Option<i64>) {
    match gate.filter(|g| *g > now) {
        Some(g) => (GATED, Some(millis(g))),
        None => (QUEUED, None),
    }
}

/// The columns of a live job needed to end, re-arm or show it.
#[derive(Debug, Clone)]
pub struct LiveRow {
    /// The job's id.
    pub id: i64,
    /// Its topic.
    pub topic: String,
    /// Its retry policy, as JSON.
    pub policy: String,
    /// The attempt it is on (1-based once claimed).
    pub attempt: i64,
    /// [`QUEUED`], [`GATED`] or [`RUNNING`].
    pub state: i64,
    /// When it was enqueued (ms since the epoch).
    pub enqueued_at: i64,
    /// Its gate (ms since the epoch), when gated.
    pub not_before: Option<i64>,
    /// The fault of its last attempt, as JSON.
    pub last_fault: Option<String>,
    /// Whether a cancel of it, while running, was asked for.
    pub cancel_requested: bool,
    /// The worker holding its lock.
    pub lock_worker: Option<String>,
    /// Its lock's token.
    pub lock_token: Option<i64>,
    /// When its lock expires (ms since the epoch).
    pub lock_expires_at: Option<i64>,
    /// Its priority within its topic.
    pub priority: i16,
}

/// The column list [`LiveRow`] is read from, in order (a macro, for
/// `concat!` into `&'static str` statements; `husk::store::sql::live_columns!`).
#[doc(hidden)]
#[macro_export]
macro_rules! __husk_sql_live_columns {
    () => {
        "id, topic, policy, attempt, state, enqueued_at, not_before, last_fault, \
         cancel_requested, lock_worker, lock_token, lock_expires_at, priority"
    };
}
pub use crate::__husk_sql_live_columns as live_columns;

/// The column list [`LiveRow`] is read from.
pub const LIVE_COLUMNS: &str = live_columns!();

impl LiveRow {
    /// Whether `lock` is this job's current, unexpired lock.
    pub fn held(&self, lock: Lock, now: SystemTime) -> bool {
        self.state == RUNNING
            && self.lock_token == Some(lock.token as i64)
            && self.lock_expires_at.is_some_and(|at| at > millis(now))
    }

    /// Attempts made, if the job ends now.
    pub fn attempts_made(&self) -> u32 {
        if self.state == RUNNING { self.attempt } else { self.attempt - 1 }.max(0) as u32
    }

    /// The `last_fault` column to store with the job's outcome.
    pub fn outcome_fault(&self, outcome: &Outcome) -> Option<String> {
        match outcome {
            Outcome::Failed { last_fault, .. } => Some(to_json(last_fault)),
            _ => self.last_fault.clone(),
        }
    }

    /// The terminal outcome of this job ending now with `outcome` at `seq`.
    pub fn terminal(&self, seq: i64, outcome: Outcome, now: SystemTime) -> TerminalOutcome {
        TerminalOutcome {
            seq: seq as u64,
            job_id: JobId(self.id as u64),
            topic: self.topic.clone(),
            attempts: self.attempts_made(),
            enqueued_at: time(self.enqueued_at),
            finished_at: now,
            outcome,
        }
    }

    /// What the expiry of this running job's lock, reclaimed at `now`,
    /// makes of it; and the record of the attempt it spent.
    pub fn expire(&self, now: SystemTime) -> Result<(Expired, AttemptRecord), serde_json::Error> {
        let expired_at = time(self.lock_expires_at.unwrap_or_default());
        let worker = self.lock_worker.clone().unwrap_or_default();
        let fault = Fault::json(
            codes::LOCK_EXPIRED,
            &serde_json::json!({ "worker": worker, "attempt": self.attempt, "expired_at_ms": to_millis(expired_at) }),
        );
        let diagnostic = format!("lock of worker {worker} expired before it reported attempt {}", self.attempt);
        let attempt = expired_attempt(self.attempt as u32, &fault, now);
        if self.cancel_requested {
            return Ok((Expired::End(Outcome::Cancelled), attempt));
        }
        let policy: RetryPolicySpec = serde_json::from_str(&self.policy)?;
        let expired = match policy.retry(self.attempt as u32, &diagnostic) {
            Some(backoff) => Expired::ReArm { fault: to_json(&fault), gate: expired_at + backoff },
            None => Expired::End(Outcome::Failed {
                topic: self.topic.clone(),
                attempts: self.attempt as u32,
                last_fault: fault,
                diagnostic,
                plugin_version: None,
            }),
        };
        Ok((expired, attempt))
    }

    /// The record of this live job (without its attempts).
    pub fn record(&self) -> Result<JobRecord, serde_json::Error> {
        Ok(JobRecord {
            id: JobId(self.id as u64),
            topic: self.topic.clone(),
            state: match self.state {
                QUEUED => JobState::Queued,
                GATED => JobState::Gated,
                _ => JobState::Running,
            },
            attempt: self.attempt as u32,
            policy: serde_json::from_str(&self.policy)?,
            enqueued_at: time(self.enqueued_at),
            not_before: self.not_before.map(time),
            lock: match (&self.lock_worker, self.lock_expires_at) {
                (Some(worker), Some(at)) => Some(LockInfo { worker: worker.clone(), expires_at: time(at) }),
                _ => None,
            },
            last_fault: self.last_fault.as_deref().map(serde_json::from_str).transpose()?,
            cancel_requested: self.cancel_requested,
            outcome: None,
            discarded: false,
            attempts: Vec::new(),
            priority: self.priority,
        })
    }
}

/// What an expired lock makes of a job: an attempt spent, then a re-arm by
/// its retry policy, or its end.
#[derive(Debug)]
pub enum Expired {
    /// Re-arm for the next attempt behind `gate` with `fault` (JSON).
    ReArm {
        /// The `husk.lock-expired` fault, as JSON.
        fault: String,
        /// When the next attempt may run.
        gate: SystemTime,
    },
    /// End the job (policy exhausted, or its cancel was asked).
    End(Outcome),
}

/// An outcome row's columns beyond the outcome (see [`outcome_columns!`]).
#[derive(Debug, Clone)]
pub struct OutcomeRow {
    /// The terminal outcome.
    pub outcome: TerminalOutcome,
    /// The job's retry policy, as JSON.
    pub policy: String,
    /// The fault of its last attempt, as JSON.
    pub last_fault: Option<String>,
    /// Whether it is an open incident.
    pub open_incident: bool,
    /// Its priority when it ended.
    pub priority: i16,
}

/// The record of an ended job from its outcome row (without its attempts).
pub fn record_of_outcome(row: OutcomeRow) -> Result<JobRecord, serde_json::Error> {
    let OutcomeRow { outcome, policy, last_fault, open_incident, priority } = row;
    let (policy, last_fault) = (policy.as_str(), last_fault.as_deref());
    let discarded = matches!(outcome.outcome, crate::outcome::Outcome::Failed { .. }) && !open_incident;
    Ok(JobRecord {
        id: outcome.job_id,
        topic: outcome.topic.clone(),
        state: JobState::Terminal,
        attempt: outcome.attempts,
        policy: serde_json::from_str(policy)?,
        enqueued_at: outcome.enqueued_at,
        not_before: None,
        lock: None,
        last_fault: last_fault.map(serde_json::from_str).transpose()?,
        cancel_requested: false,
        outcome: Some(outcome),
        discarded,
        attempts: Vec::new(),
        priority,
    })
}

/// Sums per-(topic, state) counts, sorted by topic, into depths.
pub fn depths_of(rows: Vec<(String, i64, i64)>) -> Vec<(String, super::Depth)> {
    let mut depths: Vec<(String, super::Depth)> = Vec::new();
    for (topic, state, count) in rows {
        if depths.last().is_none_or(|(t, _)| *t != topic) {
            depths.push((topic, super::Depth::default()));
        }
        let depth = &mut depths.last_mut().expect("pushed above").1;
        match state {
            QUEUED => depth.queued = count as u64,
            GATED => depth.gated = count as u64,
            _ => depth.running = count as u64,
        }
    }
    depths
}

/// The column list an outcome row is read from, in order (a macro, as
/// [`live_columns!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __husk_sql_outcome_columns {
    () => {
        "seq, job_id, topic, attempts, enqueued_at, finished_at, outcome, policy, last_fault, open_incident, priority"
    };
}
pub use crate::__husk_sql_outcome_columns as outcome_columns;

/// The column list an outcome row is read from.
pub const OUTCOME_COLUMNS: &str = outcome_columns!();

/// A kept plugin version read from its row: `digest`, `origin` (see
/// [`Origin::as_str`](crate::versions::Origin::as_str)), `deployed_by`,
/// `deployed_at` (ms since the epoch). An unknown origin is a corrupt row.
pub fn stored_version(
    digest: String,
    origin: &str,
    by: Option<String>,
    at: i64,
) -> Result<super::StoredVersion, String> {
    let origin = crate::versions::Origin::from_name(origin)
        .ok_or_else(|| format!("plugin version {digest}: unknown origin `{origin}`"))?;
    Ok(super::StoredVersion { digest, stamp: crate::versions::Stamp { origin, by, at: time(at) } })
}

/// The cutoffs (ms since the epoch) of a prune at `now`: outcomes of each
/// kind that ended at or before theirs go; `[completed, failed, others,
/// the latest of the three]`. See [`prune_candidates!`].
pub fn prune_cutoffs(retention: &super::Retention, now: SystemTime) -> [i64; 4] {
    let cutoff = |keep| now.checked_sub(keep).map_or(-1, millis);
    let cutoffs = [cutoff(retention.completed), cutoff(retention.failed), cutoff(retention.business)];
    [cutoffs[0], cutoffs[1], cutoffs[2], cutoffs.into_iter().max().unwrap_or(-1)]
}

/// The subquery selecting up to `$5` prunable outcomes (not open incidents,
/// ended before their kind's cutoff `$1`–`$3`, bounded by `$4`; see
/// [`prune_cutoffs`]), oldest first, from the outcome table `$table`, with
/// placeholders `$p` (`?` or `$`). An outcome's JSON
/// starts with its kind (serde writes an internally tagged enum's tag first).
#[doc(hidden)]
#[macro_export]
macro_rules! __husk_sql_prune_candidates {
    ($table:literal, $p:literal) => {
        concat!(
            "SELECT seq FROM ",
            $table,
            " WHERE NOT open_incident",
            " AND finished_at <= CAST(",
            $p,
            "4 AS BIGINT)",
            " AND finished_at <= CASE",
            " WHEN outcome LIKE '{\"kind\":\"completed\"%' THEN CAST(",
            $p,
            "1 AS BIGINT)",
            " WHEN outcome LIKE '{\"kind\":\"failed\"%' THEN CAST(",
            $p,
            "2 AS BIGINT)",
            " ELSE CAST(",
            $p,
            "3 AS BIGINT) END",
            " ORDER BY finished_at LIMIT ",
            $p,
            "5"
        )
    };
}
pub use crate::__husk_sql_prune_candidates as prune_candidates;
