//! The answers of the job, incident and outcome-stream endpoints.

use serde::Serialize;
use utoipa::ToSchema;

use husk::outcome::TerminalOutcome;

use super::{Job, Outcome, time};

/// Jobs, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobList {
    /// The jobs; pass the last one's id as `before` for the next page.
    pub jobs: Vec<Job>,
}

/// Open incidents: failed jobs an operator may retry or discard.
#[derive(Debug, Serialize, ToSchema)]
pub struct IncidentList {
    /// The incidents, each a job in state `failed`.
    pub incidents: Vec<Job>,
}

/// A job enqueued, or found by its idempotency key.
#[derive(Debug, Serialize, ToSchema)]
pub struct Enqueued {
    /// The job's id.
    pub id: u64,
    /// Its topic.
    pub topic: String,
    /// False when the key named a job enqueued before.
    pub created: bool,
    /// When a job created `scheduled` may first run (RFC 3339); absent
    /// when it may run at once, or was not created.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub run_at: Option<String>,
}

/// One job of a batch's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchJobEnqueued {
    /// The job's id.
    pub id: u64,
    /// False when its key named a job enqueued before.
    pub created: bool,
}

/// A batch enqueued.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchEnqueued {
    /// The topic.
    pub topic: String,
    /// How many jobs were created.
    pub created: usize,
    /// Each job of the batch, in order.
    pub jobs: Vec<BatchJobEnqueued>,
}

/// What a cancel did.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CancelResult {
    /// The job had not started: it ended `cancelled`.
    Cancelled,
    /// The job is running: it is interrupted at its next epoch tick.
    Cancelling,
    /// The job had ended already.
    AlreadyEnded,
}

/// The answer to a cancel.
#[derive(Debug, Serialize, ToSchema)]
pub struct Cancelled {
    /// The job.
    pub id: u64,
    /// What happened.
    pub result: CancelResult,
}

/// What an incident action did.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IncidentResult {
    /// Queued again with a fresh attempt budget.
    Requeued,
    /// Closed without a retry.
    Discarded,
}

/// The answer to an incident's retry or discard.
#[derive(Debug, Serialize, ToSchema)]
pub struct IncidentAction {
    /// The job.
    pub id: u64,
    /// What happened.
    pub result: IncidentResult,
}

/// An outcome in the stream: the job, and how it ended.
#[derive(Debug, Serialize, ToSchema)]
pub struct StreamedOutcome {
    /// Its place in the stream.
    pub cursor: u64,
    /// The job.
    pub job_id: u64,
    /// The job's topic.
    pub topic: String,
    /// When the job was enqueued.
    #[schema(value_type = String, format = DateTime)]
    pub enqueued_at: String,
    /// How it ended.
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl From<&TerminalOutcome> for StreamedOutcome {
    fn from(ended: &TerminalOutcome) -> Self {
        Self {
            cursor: ended.seq,
            job_id: ended.job_id.0,
            topic: ended.topic.clone(),
            enqueued_at: time(ended.enqueued_at),
            outcome: ended.into(),
        }
    }
}

/// A page of the outcome stream.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutcomePage {
    /// The tenant's outcomes after the cursor asked for, oldest first.
    pub outcomes: Vec<StreamedOutcome>,
    /// Where the next poll starts (`after`).
    pub cursor: u64,
}
