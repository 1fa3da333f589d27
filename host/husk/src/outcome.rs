//! Terminal outcomes: the only thing that leaves the dispatcher, exactly
//! once per job.

use std::time::SystemTime;

use parking_lot::Mutex;

use serde::{Deserialize, Serialize};

use crate::fault::Fault;
use crate::job::JobId;

/// How a job ended, for good.
///
/// Serialized internally tagged (`{"kind": "completed", "output": …}`);
/// the output as [`json_bytes`](crate::wire::json_bytes) says, byte-exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Outcome {
    /// The operation returned output.
    Completed {
        /// The output bytes (by convention JSON).
        #[serde(with = "crate::wire::json_bytes")]
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
        self.outcome_kind().as_str()
    }

    /// The kind of outcome.
    pub fn outcome_kind(&self) -> OutcomeKind {
        match self {
            Outcome::Completed { .. } => OutcomeKind::Completed,
            Outcome::BusinessError { .. } => OutcomeKind::BusinessError,
            Outcome::BusinessStatus { .. } => OutcomeKind::BusinessStatus,
            Outcome::Failed { .. } => OutcomeKind::Failed,
            Outcome::Cancelled => OutcomeKind::Cancelled,
        }
    }
}

/// The kinds of [`Outcome`], without their data (a filter's choice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeKind {
    /// [`Outcome::Completed`].
    Completed,
    /// [`Outcome::BusinessError`].
    BusinessError,
    /// [`Outcome::BusinessStatus`].
    BusinessStatus,
    /// [`Outcome::Failed`].
    Failed,
    /// [`Outcome::Cancelled`].
    Cancelled,
}

impl OutcomeKind {
    /// Every kind, in the order the dashboard shows them.
    pub const ALL: [OutcomeKind; 5] = [
        OutcomeKind::Completed,
        OutcomeKind::BusinessError,
        OutcomeKind::BusinessStatus,
        OutcomeKind::Failed,
        OutcomeKind::Cancelled,
    ];

    /// Its name, as an outcome's `kind` field writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Completed => "completed",
            OutcomeKind::BusinessError => "business-error",
            OutcomeKind::BusinessStatus => "business-status",
            OutcomeKind::Failed => "failed",
            OutcomeKind::Cancelled => "cancelled",
        }
    }
}

impl std::str::FromStr for OutcomeKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|k| k.as_str() == text).ok_or_else(|| format!("unknown outcome `{text}`"))
    }
}

// By hand, through one plain struct: serde's derive of an internally tagged
// enum buffers the fields, and the byte-exact output is read as raw JSON text,
// which only serde_json's own deserializer gives.
impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;

        #[derive(Deserialize)]
        struct Fields {
            kind: String,
            #[serde(default, with = "crate::wire::json_bytes")]
            output: Vec<u8>,
            code: Option<String>,
            message: Option<String>,
            value: Option<String>,
            topic: Option<String>,
            attempts: Option<u32>,
            last_fault: Option<Fault>,
            diagnostic: Option<String>,
            plugin_version: Option<String>,
        }

        fn field<T, E: Error>(value: Option<T>, name: &'static str) -> Result<T, E> {
            value.ok_or_else(|| E::missing_field(name))
        }

        let f = Fields::deserialize(deserializer)?;
        Ok(match f.kind.as_str() {
            "completed" => Outcome::Completed { output: f.output },
            "business-error" => {
                Outcome::BusinessError { code: field(f.code, "code")?, message: field(f.message, "message")? }
            }
            "business-status" => Outcome::BusinessStatus { value: field(f.value, "value")? },
            "failed" => Outcome::Failed {
                topic: field(f.topic, "topic")?,
                attempts: field(f.attempts, "attempts")?,
                last_fault: field(f.last_fault, "last_fault")?,
                diagnostic: field(f.diagnostic, "diagnostic")?,
                plugin_version: f.plugin_version,
            },
            "cancelled" => Outcome::Cancelled,
            other => {
                return Err(D::Error::unknown_variant(
                    other,
                    &["completed", "business-error", "business-status", "failed", "cancelled"],
                ));
            }
        })
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
    #[serde(with = "crate::wire::epoch_millis")]
    pub enqueued_at: SystemTime,
    /// When it ended.
    #[serde(with = "crate::wire::epoch_millis")]
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
