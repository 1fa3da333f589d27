//! Terminal outcomes: the only thing that leaves the dispatcher, exactly
//! once per job.

use std::time::SystemTime;

use parking_lot::Mutex;

use serde::{Deserialize, Serialize};

use crate::fault::Fault;
use crate::job::JobId;

/// How a job ended, for good.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Outcome {
    /// The operation returned output.
    Completed {
        /// The output bytes (by convention JSON).
        #[serde(with = "crate::fault::json_bytes")]
        output: Vec<u8>,
    },
    /// The fault was classified a business error.
    BusinessError {
        /// Error code.
        code: String,
        /// Message.
        message: String,
    },
    /// The fault was classified a business status.
    BusinessStatus {
        /// The status.
        value: String,
    },
    /// Technical faults exhausted the retry policy (or one was not
    /// retryable): an incident an operator can list and retry.
    Failed {
        /// The job's topic.
        topic: String,
        /// Attempts made.
        attempts: u32,
        /// The fault of the last attempt.
        last_fault: Fault,
        /// The classification's diagnostic of the last fault.
        diagnostic: String,
        /// Digest of the plugin version that ran the last attempt, if known.
        plugin_version: Option<String>,
    },
    /// The job was cancelled by its owner.
    Cancelled,
}

impl Outcome {
    /// A short name of the kind of outcome: `completed`, `business-error`,
    /// `business-status`, `failed` or `cancelled`.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Completed { .. } => "completed",
            Outcome::BusinessError { .. } => "business-error",
            Outcome::BusinessStatus { .. } => "business-status",
            Outcome::Failed { .. } => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// A terminal outcome with the job it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalOutcome {
    /// Position in the store's outcome log: increasing, a resumable cursor.
    pub seq: u64,
    /// The job.
    pub job_id: JobId,
    /// The job's topic.
    pub topic: String,
    /// Attempts made (0 for a job cancelled before it ran).
    pub attempts: u32,
    /// When the job was enqueued.
    #[serde(with = "crate::fault::epoch_millis")]
    pub enqueued_at: SystemTime,
    /// When it ended.
    #[serde(with = "crate::fault::epoch_millis")]
    pub finished_at: SystemTime,
    /// How it ended.
    pub outcome: Outcome,
}

/// Receives terminal outcomes: exactly one per job, never an intermediate
/// retry. Called on worker threads, outside every store lock; keep it quick
/// (hand the outcome to a channel if the consumer is slow).
pub trait OutcomeSink: Send + Sync + 'static {
    /// Takes one terminal outcome.
    fn deliver(&self, outcome: &TerminalOutcome);
}

/// A sink that keeps every outcome in memory (tests, the demo, small embeds).
#[derive(Debug, Default)]
pub struct CollectingSink {
    outcomes: Mutex<Vec<TerminalOutcome>>,
}

impl CollectingSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every outcome delivered so far, in delivery order.
    pub fn outcomes(&self) -> Vec<TerminalOutcome> {
        self.outcomes.lock().clone()
    }

    /// How many outcomes were delivered.
    pub fn len(&self) -> usize {
        self.outcomes.lock().len()
    }

    /// Whether nothing was delivered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl OutcomeSink for CollectingSink {
    fn deliver(&self, outcome: &TerminalOutcome) {
        self.outcomes.lock().push(outcome.clone());
    }
}

/// A sink that drops every outcome (when only the store's log matters).
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl OutcomeSink for NullSink {
    fn deliver(&self, _outcome: &TerminalOutcome) {}
}
