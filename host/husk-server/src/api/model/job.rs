//! A job as the API tells it: its state, attempts, faults and outcome.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use husk::fault::Fault as StoredFault;
use husk::outcome::{Outcome as StoredOutcome, OutcomeKind, TerminalOutcome};
use husk::retry::RetryPolicySpec;
use husk::store::{AttemptRecord, JobRecord, JobState, ListFilter};

use super::time;

/// Where a job is, for people: waiting (`queued`; `scheduled` for a later
/// start; `retrying` after a failed attempt), `running`, or how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobStatus {
    /// Waiting for a worker.
    Queued,
    /// Waiting for its start time.
    Scheduled,
    /// Waiting for its next attempt after a failed one.
    Retrying,
    /// Held by a worker.
    Running,
    /// Ended with output.
    Completed,
    /// Ended with a fault its error mapper called a business error.
    BusinessError,
    /// Ended with a fault its error mapper called a business status.
    BusinessStatus,
    /// Ended with technical faults past its retry policy: an open incident.
    Failed,
    /// Failed, and its incident discarded: it ends so, never retried.
    Discarded,
    /// Cancelled by its owner.
    Cancelled,
}

impl JobStatus {
    /// Every status, in the order of a job's life.
    pub const ALL: [JobStatus; 10] = [
        JobStatus::Queued,
        JobStatus::Scheduled,
        JobStatus::Retrying,
        JobStatus::Running,
        JobStatus::Completed,
        JobStatus::BusinessError,
        JobStatus::BusinessStatus,
        JobStatus::Failed,
        JobStatus::Discarded,
        JobStatus::Cancelled,
    ];

    /// The status of `record`.
    pub fn of(record: &JobRecord) -> Self {
        match record.state {
            JobState::Queued => JobStatus::Queued,
            JobState::Gated if record.attempt > 1 => JobStatus::Retrying,
            JobState::Gated => JobStatus::Scheduled,
            JobState::Running => JobStatus::Running,
            JobState::Terminal if record.discarded => JobStatus::Discarded,
            JobState::Terminal => match record.outcome.as_ref().map(|o| o.outcome.outcome_kind()) {
                Some(kind) => Self::ended(kind),
                // A terminal record has its outcome; if a store lost it, the
                // job still ended.
                None => JobStatus::Completed,
            },
        }
    }

    fn ended(kind: OutcomeKind) -> Self {
        match kind {
            OutcomeKind::Completed => JobStatus::Completed,
            OutcomeKind::BusinessError => JobStatus::BusinessError,
            OutcomeKind::BusinessStatus => JobStatus::BusinessStatus,
            OutcomeKind::Failed => JobStatus::Failed,
            OutcomeKind::Cancelled => JobStatus::Cancelled,
        }
    }

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Scheduled => "scheduled",
            JobStatus::Retrying => "retrying",
            JobStatus::Running => "running",
            JobStatus::Completed => "completed",
            JobStatus::BusinessError => "business-error",
            JobStatus::BusinessStatus => "business-status",
            JobStatus::Failed => "failed",
            JobStatus::Discarded => "discarded",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// The store's filter a listing asked for `status` and `outcome`
    /// makes (its other fields left to the caller); `None` when the two
    /// contradict each other (no job matches).
    pub(crate) fn list_filter(status: Option<JobStatus>, outcome: Option<OutcomeKind>) -> Option<ListFilter> {
        let Some(status) = status else { return Some(ListFilter { outcome, ..ListFilter::default() }) };
        let (state, ended) = match status {
            JobStatus::Queued => (JobState::Queued, None),
            JobStatus::Scheduled | JobStatus::Retrying => (JobState::Gated, None),
            JobStatus::Running => (JobState::Running, None),
            JobStatus::Completed => (JobState::Terminal, Some(OutcomeKind::Completed)),
            JobStatus::BusinessError => (JobState::Terminal, Some(OutcomeKind::BusinessError)),
            JobStatus::BusinessStatus => (JobState::Terminal, Some(OutcomeKind::BusinessStatus)),
            JobStatus::Failed | JobStatus::Discarded => (JobState::Terminal, Some(OutcomeKind::Failed)),
            JobStatus::Cancelled => (JobState::Terminal, Some(OutcomeKind::Cancelled)),
        };
        let outcome = match (ended, outcome) {
            (Some(ended), Some(outcome)) if ended != outcome => return None,
            // A waiting or running job has no outcome.
            (None, Some(_)) => return None,
            (ended, _) => ended,
        };
        Some(ListFilter {
            state: Some(state),
            outcome,
            retrying: match status {
                JobStatus::Scheduled => Some(false),
                JobStatus::Retrying => Some(true),
                _ => None,
            },
            discarded: match status {
                JobStatus::Failed => Some(false),
                JobStatus::Discarded => Some(true),
                _ => None,
            },
            ..ListFilter::default()
        })
    }
}

impl std::str::FromStr for JobStatus {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|s| s.as_str() == text).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|s| s.as_str()).collect();
            format!("unknown state `{text}`: one of {}", names.join(", "))
        })
    }
}

/// A fault: a code and its details (any JSON; text that is not JSON is a
/// string).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Fault {
    /// Its code, e.g. `payment.declined` or `husk.timeout`.
    pub code: String,
    /// Its details.
    pub body: Value,
}

impl From<&StoredFault> for Fault {
    fn from(fault: &StoredFault) -> Self {
        Self { code: fault.code.clone(), body: fault.body_value() }
    }
}

/// How a job ended, flat: `kind` says which of the other fields are set.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Outcome {
    /// How it ended.
    pub kind: OutcomeName,
    /// When it ended.
    #[schema(value_type = String, format = DateTime)]
    pub finished_at: String,
    /// Attempts made (0 for a job cancelled before it ran).
    pub attempts: u32,
    /// `completed`: the operation's output (JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// `business-error`: the error's code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `business-error`: its message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `business-status`: the status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `failed`: the fault of the last attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_fault: Option<Fault>,
    /// `failed`: why the last fault was technical.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostic: Option<String>,
    /// `failed`: the plugin version that ran the last attempt, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugin_version: Option<String>,
}

/// The kinds of outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeName {
    /// The operation returned output.
    Completed,
    /// A fault its error mapper called a business error.
    BusinessError,
    /// A fault its error mapper called a business status.
    BusinessStatus,
    /// Technical faults past the retry policy.
    Failed,
    /// Cancelled by its owner.
    Cancelled,
}

impl From<&TerminalOutcome> for Outcome {
    fn from(ended: &TerminalOutcome) -> Self {
        let mut outcome = Outcome {
            kind: OutcomeName::Completed,
            finished_at: time(ended.finished_at),
            attempts: ended.attempts,
            output: None,
            code: None,
            message: None,
            value: None,
            last_fault: None,
            diagnostic: None,
            plugin_version: None,
        };
        match &ended.outcome {
            StoredOutcome::Completed { output } => outcome.output = Some(husk::wire::body_value(output)),
            StoredOutcome::BusinessError { code, message } => {
                outcome.kind = OutcomeName::BusinessError;
                (outcome.code, outcome.message) = (Some(code.clone()), Some(message.clone()));
            }
            StoredOutcome::BusinessStatus { value } => {
                outcome.kind = OutcomeName::BusinessStatus;
                outcome.value = Some(value.clone());
            }
            StoredOutcome::Failed { last_fault, diagnostic, plugin_version, .. } => {
                outcome.kind = OutcomeName::Failed;
                outcome.last_fault = Some(last_fault.into());
                outcome.diagnostic = Some(diagnostic.clone());
                outcome.plugin_version = plugin_version.clone();
            }
            StoredOutcome::Cancelled => outcome.kind = OutcomeName::Cancelled,
        }
        outcome
    }
}

/// A retry policy.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RetryPolicy {
    /// One attempt only.
    None,
    /// The same backoff before every retry.
    Fixed {
        /// Attempts in all.
        max_attempts: u32,
        /// The backoff, e.g. `5s`.
        delay: String,
    },
    /// A backoff that doubles from `base` up to `max`.
    Exponential {
        /// Attempts in all.
        max_attempts: u32,
        /// The first backoff, e.g. `1s`.
        base: String,
        /// The largest backoff, e.g. `1m`.
        max: String,
        /// Whether each backoff is randomized within its lower half.
        jitter: bool,
    },
}

impl From<RetryPolicySpec> for RetryPolicy {
    fn from(spec: RetryPolicySpec) -> Self {
        let text = |d| humantime::format_duration(d).to_string();
        match spec {
            RetryPolicySpec::None => RetryPolicy::None,
            RetryPolicySpec::Fixed { max_attempts, delay } => RetryPolicy::Fixed { max_attempts, delay: text(delay) },
            RetryPolicySpec::Exponential { max_attempts, base, max, jitter } => {
                RetryPolicy::Exponential { max_attempts, base: text(base), max: text(max), jitter }
            }
        }
    }
}

/// Which worker holds a running job, until when.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Lock {
    /// The worker.
    pub worker: String,
    /// When its lock runs out (another worker may then take the job).
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: String,
}

/// One finished attempt of a job.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Attempt {
    /// Which attempt (1-based).
    pub attempt: u32,
    /// The plugin version that ran it, if known.
    pub plugin_version: Option<String>,
    /// Its technical fault; absent when it returned output or its fault was
    /// a business error or status (the outcome says which).
    pub fault: Option<Fault>,
    /// When it started, if known (not for a lock that ran out).
    #[schema(value_type = Option<String>, format = DateTime)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// When it was reported, or when its lock was found run out.
    #[schema(value_type = String, format = DateTime)]
    pub finished_at: String,
    /// How long the guest ran, in microseconds, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_us: Option<u64>,
    /// Fuel it burnt, when fuel is metered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
}

impl From<&AttemptRecord> for Attempt {
    fn from(a: &AttemptRecord) -> Self {
        Self {
            attempt: a.attempt,
            plugin_version: a.plugin_version.clone(),
            fault: a.fault.as_ref().map(Fault::from),
            started_at: a.started_at.map(time),
            finished_at: time(a.finished_at),
            duration_us: a.duration_us,
            fuel: a.fuel,
        }
    }
}

/// A job: where it is, its attempts, and how it ended.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Job {
    /// Its id.
    pub id: u64,
    /// Its topic.
    pub topic: String,
    /// Where it is.
    pub state: JobStatus,
    /// The attempt it is on, or the attempts made once it ended.
    pub attempt: u32,
    /// Its priority within its topic (-100 to 100; higher runs first).
    pub priority: i16,
    /// Its retry policy.
    pub retry_policy: RetryPolicy,
    /// When it was enqueued.
    #[schema(value_type = String, format = DateTime)]
    pub enqueued_at: String,
    /// When it may run, while `scheduled` or `retrying`.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub not_before: Option<String>,
    /// Who holds it, while `running`.
    pub lock: Option<Lock>,
    /// The fault of its last failed attempt.
    pub last_fault: Option<Fault>,
    /// Whether its owner asked to cancel it while it ran.
    pub cancel_requested: bool,
    /// How it ended, once it has.
    pub outcome: Option<Outcome>,
    /// Its finished attempts, oldest first (in a listing: empty).
    pub attempts: Vec<Attempt>,
    /// Its input, in the job's own answer while the store keeps it: while
    /// the job exists, and after it ends as long as its outcome, unless its
    /// topic is in `[retention] drop_inputs` (then only while it is live or
    /// an open incident); absent in listings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
}

impl From<&JobRecord> for Job {
    fn from(r: &JobRecord) -> Self {
        Self {
            id: r.id.0,
            topic: r.topic.clone(),
            state: JobStatus::of(r),
            attempt: r.attempt,
            priority: r.priority,
            retry_policy: r.policy.into(),
            enqueued_at: time(r.enqueued_at),
            not_before: r.not_before.map(time),
            lock: r.lock.as_ref().map(|l| Lock { worker: l.worker.clone(), expires_at: time(l.expires_at) }),
            last_fault: r.last_fault.as_ref().map(Fault::from),
            cancel_requested: r.cancel_requested,
            outcome: r.outcome.as_ref().map(Outcome::from),
            attempts: r.attempts.iter().map(Attempt::from).collect(),
            input: None,
        }
    }
}
