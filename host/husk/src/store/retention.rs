//! Retention: how long ended jobs are kept, and what a prune or a discard did.

use std::time::Duration;

use serde::{Deserialize, Serialize};

#[cfg(doc)]
use crate::{outcome::Outcome, store::JobStore};

/// How long ended jobs are kept (see [`Pruning::prune`](crate::store::Pruning::prune)): their outcome,
/// history and idempotency key go after this long, counted from when they
/// ended. Open incidents are kept until they are retried or discarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    /// Completed jobs (default 24 h).
    #[serde(with = "humantime_serde")]
    pub completed: Duration,
    /// Business errors and statuses, and cancelled jobs (default 7 days).
    #[serde(with = "humantime_serde")]
    pub business: Duration,
    /// Failed jobs no longer open incidents: discarded, or retried and
    /// ended again since (default 7 days).
    #[serde(with = "humantime_serde")]
    pub failed: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        const DAY: Duration = Duration::from_secs(24 * 3600);
        Self { completed: DAY, business: 7 * DAY, failed: 7 * DAY }
    }
}

impl Retention {
    /// The retention of an outcome of kind `kind` (see [`Outcome::kind`]).
    pub fn of(&self, kind: &str) -> Duration {
        match kind {
            "completed" => self.completed,
            "failed" => self.failed,
            _ => self.business,
        }
    }

    /// The outcome kinds kept for each retention, as the SQL stores prune
    /// them: (kinds, how long).
    pub fn classes(&self) -> [(&'static [&'static str], Duration); 3] {
        [
            (&["completed"], self.completed),
            (&["business-error", "business-status", "cancelled"], self.business),
            (&["failed"], self.failed),
        ]
    }
}

/// What a [`Pruning::prune`](crate::store::Pruning::prune) removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Outcomes (ended jobs, with their histories).
    pub outcomes: u64,
    /// Idempotency keys of those jobs.
    pub keys: u64,
}

/// The result of [`Incidents::discard_incident`](crate::store::Incidents::discard_incident).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscardResult {
    /// The incident is closed: no longer listed or retryable; its outcome
    /// is kept as long as [`Retention::failed`] says.
    Discarded,
    /// The job is not an open incident.
    NotAnIncident,
    /// No such job.
    NotFound,
}
